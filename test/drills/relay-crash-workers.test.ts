// The relay's crash drills (relay-crash-drills.ts, group-commit-crash-drills.ts) against `relay serve --workers 2`.
import { groupCommitCrashDrills } from './group-commit-crash-drills.ts';
import { relayCrashDrills } from './relay-crash-drills.ts';

relayCrashDrills(2);
groupCommitCrashDrills(2);
