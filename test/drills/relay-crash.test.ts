// The relay's crash drills (relay-crash-drills.ts) against a lone relay process.
import { relayCrashDrills } from './relay-crash-drills.ts';

relayCrashDrills(1);
