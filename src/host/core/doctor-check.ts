// One line of `agentmbx doctor`: what every part of the host (the relay client, the client setup
// checks, the doctor itself) reports in, so none of them imports the doctor to say it.
export type CheckLevel = 'ok' | 'warn' | 'fail';

export interface DoctorCheck {
  check: string;
  level: CheckLevel;
  detail: string;
}
