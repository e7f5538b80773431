// The throwaway PostgreSQL cluster (postgres-cluster.ts) tied to a test file: started once per file
// on first use, shut down (fast shutdown, so its shared memory is released) and removed after the
// file's tests, passed or failed; the cluster's own exit hook kills its process group if the file
// crashes. processes.ts is loaded first, so its hook kills the relays using the cluster before it stops.
// A machine without PostgreSQL gets the reason to skip with, and the tests that need it say so.
// A parent run that started one cluster for all of its files (relay-conformance.ts) names it
// in SHARED_CLUSTER_ENV; its files then make their databases there and start none of their own.
import { after } from 'node:test';
import './processes.ts';
import { attachedPostgresCluster, startPostgresCluster, type ClusterAddress, type ClusterStart } from './postgres-cluster.ts';

/** The environment variable holding a parent run's cluster (its ClusterAddress as JSON). */
export const SHARED_CLUSTER_ENV = 'AGENTMBX_TEST_POSTGRES';

let started: Promise<ClusterStart> | null = null;
let databases = 0;

/** This file's cluster (one per test file), or why there is none. */
export function testPostgres(): Promise<ClusterStart> {
  const shared = process.env[SHARED_CLUSTER_ENV];
  if (shared !== undefined) started ??= Promise.resolve({ available: true, cluster: attachedPostgresCluster(JSON.parse(shared) as ClusterAddress) });
  started ??= startPostgresCluster().then((start) => {
    if (start.available) after(() => start.cluster.stop());
    return start;
  });
  return started;
}

/** A fresh empty database in this file's cluster: its URL, or the reason to skip. */
export async function freshPostgresDatabase(): Promise<{ url: string } | { skip: string }> {
  const start = await testPostgres();
  if (!start.available) return { skip: start.reason };
  databases += 1;
  return { url: await start.cluster.createDatabase(`relay_test_${process.pid}_${databases}`) };
}
