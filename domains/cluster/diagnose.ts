/**
 * GET /api/cluster/diagnose (admin): cluster-health probes answered in the
 * platform SDK's `ClusterDiagnostics` shape. Each probe is fail-soft: one
 * that throws becomes a `probe_failed` warning instead of failing the whole
 * report. `has_issues` is true when any issue is an error.
 */
import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import type { RuntimeInfo } from '../../gateway/module.ts';
import type { SigningKeyOverview } from '../auth/index.ts';

const diagnoseIssue = z.object({
  id: z.string(),
  severity: z.enum(['error', 'warning', 'info']),
  summary: z.string(),
  detail: z.record(z.string(), z.unknown()),
  fix_endpoint: z.string().nullable(),
  fix_payload: z.record(z.string(), z.unknown()).nullable(),
  auto_fixable: z.boolean(),
});
export type DiagnoseIssue = z.output<typeof diagnoseIssue>;

/** The report: every issue a probe found; `has_issues` when any is an error. */
export const diagnoseAnswer = z.object({
  cluster_id: z.string(),
  timestamp: z.string(),
  issues: z.array(diagnoseIssue),
  has_issues: z.boolean(),
});

export interface DiagnoseSources {
  clusterId: string;
  runtime: RuntimeInfo;
  signingKeys: SigningKeyOverview;
  now: () => Date;
}

/** Certificates closer than this to their end are reported, so the operator renews before clients start failing. */
const CERTIFICATE_WARNING_DAYS = 30;
const DAY_MS = 86_400_000;

const issue = (
  id: string,
  severity: DiagnoseIssue['severity'],
  summary: string,
  detail: Record<string, unknown>,
): DiagnoseIssue => ({
  id,
  severity,
  summary,
  detail,
  fix_endpoint: null,
  fix_payload: null,
  auto_fixable: false,
});

function certificates(sources: DiagnoseSources): DiagnoseIssue[] {
  const now = sources.now().getTime();
  const found: DiagnoseIssue[] = [];
  for (const [certificate, pem] of [
    ['server', sources.runtime.serverCertPem()],
    ['ca', sources.runtime.caPem()],
  ] as const) {
    const notAfter = Date.parse(new X509Certificate(pem).validTo);
    const detail = { certificate, not_after: new Date(notAfter).toISOString() };
    if (notAfter <= now)
      found.push(issue('tls_certificate_expired', 'error', `The ${certificate} certificate has expired.`, detail));
    else if (notAfter - now < CERTIFICATE_WARNING_DAYS * DAY_MS) {
      found.push(
        issue(
          'tls_certificate_expiring',
          'warning',
          `The ${certificate} certificate expires within ${CERTIFICATE_WARNING_DAYS} days.`,
          detail,
        ),
      );
    }
  }
  return found;
}

function signingKeys(sources: DiagnoseSources): DiagnoseIssue[] {
  const retired = sources.signingKeys.overlaps();
  if (retired.length === 0) return [];
  const detail = {
    active_algorithm: sources.signingKeys.algorithm(),
    retired_keys: retired.map((key) => ({
      kid: key.kid,
      alg: key.alg,
      published_until: new Date(key.verifyUntil * 1000).toISOString(),
    })),
  };
  // Clients that accept only one key type (the platform SDK's JWKS model reads RSA members) may stumble until it ends.
  return [
    issue(
      'signing_key_overlap',
      'info',
      'A retired signing key is still published until the tokens it signed expire.',
      detail,
    ),
  ];
}

const PROBES: Record<string, (sources: DiagnoseSources) => DiagnoseIssue[]> = {
  certificates,
  signing_keys: signingKeys,
};

export function diagnose(sources: DiagnoseSources): z.output<typeof diagnoseAnswer> {
  const issues = Object.entries(PROBES).flatMap(([probe, run]) => {
    try {
      return run(sources);
    } catch (error) {
      return [
        issue('probe_failed', 'warning', `The ${probe} probe could not run.`, {
          probe,
          error: error instanceof Error ? error.message : String(error),
        }),
      ];
    }
  });
  return {
    cluster_id: sources.clusterId,
    timestamp: sources.now().toISOString(),
    issues,
    has_issues: issues.some((i) => i.severity === 'error'),
  };
}
