/**
 * The client libraries of the optional sources (S3, Kafka, Hive, Slack) are
 * loaded on first use, not when the gateway starts: together they cost about
 * 20 MB of live heap and much more start-up garbage in every gateway process,
 * most of which never reads from those platforms (RSS < 200 MB).
 * A library that cannot be loaded is the source's 502 `source_unavailable`,
 * never a 500; the next use tries again.
 */
import { RetrievalErrors } from '../errors.ts';

/** `load` (a dynamic `import()`) run once, on the first call; `library` names it in the error. */
export function lazyModule<M>(library: string, load: () => Promise<M>): () => Promise<M> {
  let loading: Promise<M> | undefined;
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw RetrievalErrors.make.source_unavailable(
        { problem: `the ${library} client library could not be loaded` },
        error,
      );
    });
    return loading;
  };
}
