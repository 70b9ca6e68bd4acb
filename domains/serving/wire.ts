/**
 * The fields the platform's public Python SDK reads from a model deployment
 * (kamiwaza-sdk 1.3.0, `UIModelDeployment`; test/integration/domains/retrieval/sdk-python.test.ts):
 * with them, `client.serving.list_deployments()` parses our listing and
 * `client.openai.get_client(model=<name>)` finds the deployment and talks
 * to `<origin><access_path>/v1`. meshgate has no model registry, so the
 * model and its config are the deployment itself (`m_id`, `m_config_id` =
 * its id), and a registered route is live: `DEPLOYED`, with one instance
 * standing for the upstream (meshgate does not probe it).
 */
import type { DeploymentRow } from './store.ts';

export function sdkModelFields(row: DeploymentRow, runtimePath: string, prefix: string) {
  return {
    m_id: row.id,
    m_config_id: row.id,
    m_name: row.name,
    status: 'DEPLOYED',
    requested_at: row.createdAt,
    deployed_at: row.createdAt,
    access_path_prefix: prefix,
    access_path: runtimePath,
    lb_port: 0,
    instances: [{ id: row.id, deployment_id: row.id, deployed_at: row.createdAt, status: 'DEPLOYED' }],
  };
}
