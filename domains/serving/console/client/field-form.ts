/**
 * A form the API judges alone: it sends the draft, and a refusal is shown beside the fields it names (the 422's
 * fields, or the one field a reason is about), the first of them focused once the fieldset is enabled again; any
 * other failure is one line under the form.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from './api.ts';
import { describe } from './ui.ts';

export interface FieldFormOptions<D> {
  readonly initial: D;
  /** What the form shows once it is sent. */
  readonly empty: D;
  readonly send: (draft: D) => Promise<unknown>;
  readonly done: () => void;
  /** The field a refusal's reason is about, when the API names no field itself. */
  readonly fieldOf?: (reason: string) => string | undefined;
  /** Said under the form when fields are marked ("Not saved: correct the marked fields."). */
  readonly marked: string;
}

export function useFieldForm<D>(options: FieldFormOptions<D>) {
  const [draft, setDraft] = useState<D>(options.initial);
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const form = useRef<HTMLFormElement>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setFieldErrors({});
    try {
      await options.send(draft);
      setDraft(options.empty);
      options.done();
    } catch (e) {
      const fields = e instanceof ApiFailure ? { ...e.fields } : {};
      const about = e instanceof ApiFailure ? options.fieldOf?.(e.reason) : undefined;
      if (about) fields[about] = describe(e);
      setFieldErrors(fields);
      setError(Object.keys(fields).length > 0 ? options.marked : describe(e));
    } finally {
      setBusy(false);
    }
  };
  // Once the problems are on the page (and the fieldset enabled again), the first of them takes the focus.
  useEffect(() => {
    if (!busy) form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [fieldErrors, busy]);
  const set = (key: keyof D) => (e: any) => setDraft({ ...draft, [key]: e.currentTarget.value });
  return { draft, setDraft, fieldErrors, error, busy, form, submit, set };
}
