// The loop guard: two agents that answer each other automatically must not run all night behind
// their owner's back. Per thread and per pair of agents, the messages the two wrote inside the
// window since a person (any host's `owner`) last wrote in the thread are counted; past the budget
// the thread trips: no wake path wakes anyone for it (the mail is still delivered and listed), the
// owner gets one alert from `mbx`, doctor shows it, until `agentmbx guard resume <thread>` or a
// message from the owner in the thread lifts it.
import { alertLocal } from '../core/alerts.ts';
import { HostError } from '../core/host-error.ts';
import { localAddress, type HostNode } from '../core/node.ts';
import { OWNER, SYSTEM_SENDER } from '../core/route.ts';
import type { HostStore } from '../store/host-store.ts';
import type { GuardTripRow, WakeDeliveryRow } from '../store/wake-tables.ts';
import { ageText, isoTime } from '../../common/time-text.ts';

/** Messages a pair of agents may write in one thread inside the window before wakes stop. */
export const GUARD_BUDGET_DEFAULT = 30;
export const GUARD_WINDOW_DEFAULT_MS = 10 * 60_000;
export const GUARD_BUDGET_MAX = 100_000;
export const GUARD_WINDOW_MIN_MS = 1_000;
export const GUARD_WINDOW_MAX_MS = 7 * 86_400_000;

const META_BUDGET = 'wake.guard.budget';
const META_WINDOW = 'wake.guard.window_ms';

export class GuardError extends HostError {}

export interface GuardSettings {
  budget: number;
  windowMs: number;
}

export function guardSettings(store: HostStore): GuardSettings {
  const stored = (key: string, fallback: number): number => {
    const value = Number(store.getMeta(key));
    return Number.isSafeInteger(value) && value > 0 ? value : fallback;
  };
  return { budget: stored(META_BUDGET, GUARD_BUDGET_DEFAULT), windowMs: stored(META_WINDOW, GUARD_WINDOW_DEFAULT_MS) };
}

/** Sets the budget and/or window (checked against their bounds); returns the settings now in force. */
export function setGuardSettings(store: HostStore, change: Partial<GuardSettings>): GuardSettings {
  if (change.budget !== undefined && !(Number.isSafeInteger(change.budget) && change.budget >= 1 && change.budget <= GUARD_BUDGET_MAX)) {
    throw new GuardError(`the budget must be an integer from 1 to ${GUARD_BUDGET_MAX}`, 'invalid');
  }
  if (change.windowMs !== undefined && !(change.windowMs >= GUARD_WINDOW_MIN_MS && change.windowMs <= GUARD_WINDOW_MAX_MS)) {
    throw new GuardError('the window must be from 1s to 7d', 'invalid');
  }
  store.transaction(() => {
    if (change.budget !== undefined) store.setMeta(META_BUDGET, String(change.budget));
    if (change.windowMs !== undefined) store.setMeta(META_WINDOW, String(change.windowMs));
  });
  return guardSettings(store);
}

export type GuardVerdict = { wake: true } | { wake: false; reason: string };

function localPart(address: string): string {
  return address.slice(0, address.lastIndexOf('@'));
}

function heldReason(trip: GuardTripRow): string {
  return `held by the loop guard: thread ${trip.thread} tripped (${trip.pair} wrote ${trip.count} messages without the owner); agentmbx guard resume ${trip.thread}`;
}

/**
 * Whether `agent` may be woken for the delivery `row`. Counts the sender and the agent's messages in
 * the thread; past the budget the thread trips (recorded once, with one alert to the owner). An
 * owner's message after a trip lifts it. Writes only when it trips or lifts; call inside the
 * transaction that records the wake.
 */
export function guardVerdict(node: HostNode, row: WakeDeliveryRow, agent: string): GuardVerdict {
  const { store } = node;
  const tables = store.wake;
  const sender = localPart(row.from_addr);
  // a person's (or the host's own) mail always wakes
  if (sender === OWNER || sender === SYSTEM_SENDER) return { wake: true };
  const active = tables.activeTrip(row.thread);
  if (active !== undefined) {
    const ownerRow = tables.lastOwnerRow(row.thread, Number.MAX_SAFE_INTEGER);
    if (ownerRow <= active.msg_row) return { wake: false, reason: heldReason(active) };
    tables.liftTrip(active.id, 'a message from the owner in the thread', ownerRow, node.nowMs());
  }
  const settings = guardSettings(store);
  const floor = Math.max(tables.lastOwnerRow(row.thread, row.msg_row), tables.liftMark(row.thread));
  const pair: [string, string] = [row.from_addr, localAddress(node, agent)];
  const count = tables.countFrom(row.thread, pair, floor, row.msg_row, row.created_at - settings.windowMs);
  if (count <= settings.budget) return { wake: true };
  const trip = { thread: row.thread, pair: [...pair].sort().join(' <-> '), count, msg_id: row.id, msg_row: row.msg_row, tripped_at: node.nowMs() };
  if (tables.insertTrip(trip)) {
    alertLocal(
      node,
      OWNER,
      `loop guard: wakes stopped for thread ${row.thread}`,
      [
        `${trip.pair} wrote ${count} messages in thread ${row.thread} within ${ageText(settings.windowMs)} without a message from you`,
        `(budget ${settings.budget}). Their mail is still delivered, but no agent is woken for this thread any more.`,
        '',
        `Look at the thread:  agentmbx read ${row.id} --agent ${agent} --peek`,
        `Let them go on:      agentmbx guard resume ${row.thread}`,
        'Any message you send in the thread (a reply to this alert) lifts it too.',
      ].join('\n'),
      row.thread,
    );
  }
  return { wake: false, reason: heldReason({ ...trip, id: 0, lifted_at: null, lifted_by: null, lift_mark: null }) };
}

/** Most held threads listed at once (`guard list`, doctor, the owner's page), oldest trips first. */
export const HELD_THREADS_LIST_MAX = 1_000;

/** The threads whose wakes the guard holds now (the oldest HELD_THREADS_LIST_MAX). */
export function heldThreads(store: HostStore): GuardTripRow[] {
  return store.wake.activeTrips(HELD_THREADS_LIST_MAX);
}

/** A thread the guard holds, as `guard list` and the owner's page show it. */
export interface HeldThread {
  thread: string;
  /** the two addresses that wrote to each other, "a <-> b" */
  pair: string;
  count: number;
  /** the message at which it tripped */
  message: string;
  since: string;
}

export interface GuardOverview {
  budget: number;
  window_ms: number;
  held: HeldThread[];
}

/** The guard's budget and window and the threads it holds (`guard list --json`, the owner's page). */
export function guardOverview(store: HostStore): GuardOverview {
  const settings = guardSettings(store);
  return {
    budget: settings.budget,
    window_ms: settings.windowMs,
    held: heldThreads(store).map((t) => ({ thread: t.thread, pair: t.pair, count: t.count, message: t.msg_id, since: isoTime(t.tripped_at) })),
  };
}

/** Lifts the guard of a thread (given by its id or any message id in it); returns the lifted trip. */
export function resumeThread(node: HostNode, threadOrMessage: string, by = 'the owner (agentmbx guard resume)'): GuardTripRow {
  const { store } = node;
  return store.transaction(() => {
    const thread = store.wake.activeTrip(threadOrMessage) !== undefined ? threadOrMessage : store.mail.message(threadOrMessage)?.thread;
    const trip = thread === undefined ? undefined : store.wake.activeTrip(thread);
    if (trip === undefined) throw new GuardError(`the loop guard holds no thread ${threadOrMessage} (agentmbx guard list)`, 'not-found');
    store.wake.liftTrip(trip.id, by, store.wake.lastMessageRow(), node.nowMs());
    return trip;
  });
}

/** Doctor's lines: one warning per held thread, with the command that lifts it. */
export function guardChecks(node: HostNode): { check: string; level: 'warn'; detail: string }[] {
  return heldThreads(node.store).map((t) => ({
    check: `loop guard ${t.thread}`,
    level: 'warn' as const,
    detail: `wakes stopped ${ageText(node.nowMs() - t.tripped_at)} ago: ${t.pair} wrote ${t.count} messages without the owner (agentmbx guard resume ${t.thread})`,
  }));
}
