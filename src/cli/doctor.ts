import type { Command } from 'commander';

export function registerDoctorCommand(_program: Command): void {}
