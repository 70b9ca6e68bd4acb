/** All catalog routes, plus the service root and health (both without credentials, as probes call them). */
import { z } from 'zod';
import type { RouteDef } from '../../gateway/module.ts';
import { containerRoutes } from './containers-routes.ts';
import type { ContainerService } from './containers-service.ts';
import { datasetRoutes } from './datasets-routes.ts';
import type { DatasetService } from './datasets-service.ts';
import { ok } from './route-kit.ts';
import { secretRoutes } from './secrets-routes.ts';
import type { SecretsService } from './secrets-service.ts';

export interface CatalogServices {
  datasets: DatasetService;
  containers: ContainerService;
  secrets: SecretsService;
}

export function catalogRoutes(services: CatalogServices, maxBody: number): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/catalog/',
      auth: 'none',
      doc: {
        summary: 'The catalog service root',
        answers: { 200: z.object({ service: z.string(), status: z.string() }) },
      },
      handle: () => ok({ service: 'Platform Catalog Service', status: 'ok' }),
    },
    {
      method: 'GET',
      path: '/catalog/health',
      auth: 'none',
      doc: { summary: 'Liveness of the catalog service', answers: { 200: z.object({ status: z.string() }) } },
      handle: () => ok({ status: 'ok' }),
    },
    ...datasetRoutes(services.datasets, maxBody),
    ...containerRoutes(services.containers, maxBody),
    ...secretRoutes(services.secrets, maxBody),
  ];
}
