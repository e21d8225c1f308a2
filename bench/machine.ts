import { spawnSync } from 'node:child_process';
import os from 'node:os';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  totalMemoryGiB: number;
  platform: string;
  node: string;
  redis: string;
  /** 1-minute load average when the run started: a busy machine explains odd figures. */
  loadAverage1m: number;
  /** The commit measured and whether src/ had uncommitted changes (the engine changes often). */
  git?: { commit: string; srcDirty: boolean };
}

export function machineInfo(redisVersion: string): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    totalMemoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    redis: redisVersion,
    loadAverage1m: Math.round(os.loadavg()[0] * 100) / 100,
    git: gitInfo(),
  };
}

function gitInfo(): MachineInfo['git'] {
  const run = (...args: string[]) => spawnSync('git', args, { encoding: 'utf8' });
  const head = run('rev-parse', '--short', 'HEAD');
  if (head.status !== 0) return undefined;
  const status = run('status', '--porcelain', '--', 'src');
  return { commit: head.stdout.trim(), srcDirty: status.stdout.trim().length > 0 };
}
