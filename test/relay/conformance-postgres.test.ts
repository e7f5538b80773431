// The relay's HTTP conformance tests against two relays on one PostgreSQL database (helpers/relay-conformance.ts).
import { postgresMissing } from '../helpers/postgres-cluster.ts';
import { conformanceTest } from '../helpers/relay-conformance.ts';

conformanceTest('postgres-2', 'two relays on one PostgreSQL database', postgresMissing());
