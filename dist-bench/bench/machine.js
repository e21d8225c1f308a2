import { spawnSync } from 'node:child_process';
import os from 'node:os';
export function machineInfo(redisVersion) {
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
function gitInfo() {
    const run = (...args) => spawnSync('git', args, { encoding: 'utf8' });
    const head = run('rev-parse', '--short', 'HEAD');
    if (head.status !== 0)
        return undefined;
    const status = run('status', '--porcelain', '--', 'src');
    return { commit: head.stdout.trim(), srcDirty: status.stdout.trim().length > 0 };
}
//# sourceMappingURL=machine.js.map