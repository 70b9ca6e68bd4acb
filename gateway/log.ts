/**
 * Structured logs with pino. Credentials never reach a log line: the
 * redact list covers the headers and fields that could carry them.
 */
import { type DestinationStream, type Logger, pino } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  '*.password',
  '*.preshared_key',
  '*.value',
  '*.token',
  '*.access_token',
  '*.refresh_token',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { svc: 'meshgate' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination);
}
