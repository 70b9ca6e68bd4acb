import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AggregatorRegistry, Histogram, Registry } from 'prom-client';
import { BoundHistogram } from '../../../../gateway/observability/histogram.ts';
import { DURATION_BUCKETS } from '../../../../gateway/observability/metrics.ts';

const LABELS = ['service', 'route'] as const;
const OBSERVED: [string, string, number][] = [
  ['api', '/api/ping', 0.0004],
  ['api', '/api/ping', 0.001], // on a bound: counted in that bucket (le is inclusive)
  ['api', '/api/ping', 0.07],
  ['models', '/', 3],
  ['models', '/', 120], // above every bound: +Inf only
  ['api', '/api/users', 0],
];

/** The same observations in prom-client's Histogram and in ours, each in a registry of its own. */
function both(values: [string, string, number][] = OBSERVED) {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({
    name: 'h',
    help: 'help text',
    labelNames: LABELS,
    buckets: [...DURATION_BUCKETS],
    registers: [theirs],
  });
  const bound = new BoundHistogram('h', 'help text', LABELS, DURATION_BUCKETS, [ours]);
  for (const [service, route, value] of values) {
    reference.labels(service, route).observe(value);
    bound.labels(service, route).observe(value);
  }
  return { theirs, ours, bound };
}

test('a scrape reads exactly what prom-client renders for the same observations', async () => {
  const { theirs, ours } = both();
  assert.equal(await ours.metrics(), await theirs.metrics());
});

test("the workers' aggregation sums it as it sums prom-client's histograms", async () => {
  const a = both();
  const b = both(OBSERVED.slice(2));
  const theirs = await AggregatorRegistry.aggregate([
    await a.theirs.getMetricsAsJSON(),
    await b.theirs.getMetricsAsJSON(),
  ]).metrics();
  const ours = await AggregatorRegistry.aggregate([
    await a.ours.getMetricsAsJSON(),
    await b.ours.getMetricsAsJSON(),
  ]).metrics();
  assert.equal(ours, theirs);
});

test('a bound series is the same object for the same labels; bad input is refused as prom-client refuses it', () => {
  const { bound } = both();
  assert.equal(bound.labels('api', '/api/ping'), bound.labels('api', '/api/ping'));
  assert.throws(() => bound.labels('api'), /expected 2 label values/);
  assert.throws(() => bound.labels('api', '/x').observe(Number.NaN), TypeError);
  assert.throws(() => new BoundHistogram('x', 'help', ['le'], DURATION_BUCKETS, []), /'le' is reserved/);
});

test('a reset zeroes the series its callers hold: what they observe after it counts, from zero', async () => {
  const { bound, ours } = both();
  const held = bound.labels('api', '/api/ping');
  bound.labels('never', 'observed');
  ours.resetMetrics();
  assert.doesNotMatch(await ours.metrics(), /h_bucket/);
  held.observe(0.2);
  held.observe(0.3);
  const text = await ours.metrics();
  assert.match(text, /^h_count\{service="api",route="\/api\/ping"\} 2$/m);
  assert.match(text, /^h_sum\{service="api",route="\/api\/ping"\} 0\.5$/m);
  assert.doesNotMatch(text, /never/);
});

test('remove drops the series of one label value; their holders observe into nothing; others stay', async () => {
  const { bound, ours } = both();
  const held = bound.labels('models', '/');
  const told: [string, string][] = [];
  bound.onRemove((label, value) => told.push([label, value]));
  assert.deepEqual([...bound.valuesOf('service')].sort(), ['api', 'models']);
  bound.remove('service', 'models');
  assert.deepEqual(told, [['service', 'models']]);
  assert.deepEqual([...bound.valuesOf('service')], ['api']);
  held.observe(0.2);
  let text = await ours.metrics();
  assert.doesNotMatch(text, /models/);
  assert.match(text, /^h_count\{service="api",route="\/api\/ping"\} 3$/m);
  // Bound again, the value counts from zero.
  bound.labels('models', '/').observe(0.5);
  text = await ours.metrics();
  assert.match(text, /^h_count\{service="models",route="\/"\} 1$/m);
});
