// The group-commit crash drills (group-commit-crash-drills.ts) against a lone relay process.
import { groupCommitCrashDrills } from './group-commit-crash-drills.ts';

groupCommitCrashDrills(1);
