// The relay's HTTP conformance tests against a group's leader and two workers on one SQLite store (helpers/relay-conformance.ts).
import { conformanceTest } from '../helpers/relay-conformance.ts';

conformanceTest('sqlite-workers', 'a leader and two workers on one SQLite store (in one process: the crash drills run the real --workers 2)', null);
