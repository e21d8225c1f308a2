/**
 * The `forge` nemesis: a lock handed off (`lock.handOff()`), and its handle altered before it
 * is adopted (`locks.adopt(handle)`), as anyone who can write to the queue a handle travels on
 * could alter it.
 *
 * The holder's read is taken over, as for the other holder faults, and the holder hands its lock
 * off; its read is then answered with a refusal that never reaches the resource, as the lock is
 * no longer its own (the worker would otherwise write under the fencing token that the adopter
 * now holds). Two other workers are each presented a forged copy of the handle, at once: one
 * whose fencing token was raised by {@link RAISED_BY}, one whose token was changed. A store
 * tells holders apart by their token alone, so a raised fencing token, adopted, would be
 * accepted by a fenced resource, and every later genuine holder refused as stale; and a changed
 * token names no hold. Both must be refused, and neither adopter may ever report a section under
 * the lock. Then a third worker adopts the genuine handle (unless the lock lapsed meanwhile: it
 * lives on the TTL of the hand-off's renewal) and runs its section under it, with the fencing
 * token of the hand-off: its read and write must go in, and so must those of every later
 * holder (the analysis checks the tokens, the counter and stale writes over the whole run).
 *
 * On one Redis and on PostgreSQL, which hand locks off; on a mutex, whose tokens order writes.
 */
import { shuffled } from './random.mjs';

/**
 * @typedef {import('./checker.mjs').SafetyChecker} SafetyChecker
 * @typedef {import('./checker.mjs').Fault} Fault
 * @typedef {import('./checker.mjs').WorkerHandle} WorkerHandle
 * @typedef {import('./worker.mjs').ReadRequest} ReadRequest
 * @typedef {import('./worker.mjs').WorkerMessage} WorkerMessage
 * @typedef {import('nestjs-redis-lock').LockHandle} LockHandle
 */
/**
 * A worker's answer to a hand-off or an adoption request.
 * @typedef {{ handle?: LockHandle, fencingToken?: number, error?: string, message?: string }} Answer
 */

/** How far the forged handle's fencing token is raised. */
export const RAISED_BY = 1e12;

/** How long a worker may take to answer a hand-off or an adoption, in ms. */
const ANSWER_BOUND_MS = 10_000;

/** What the workers answered to hand-offs and adoptions, and the fencing tokens handed off. */
export class HandOffs {
  constructor() {
    /** @type {Map<string, Answer>} by `handOff:<worker>:<token>` or the adoption's label */
    this.answers = new Map();
    /** The fencing tokens of the locks handed off: the only ones an adopter may hold. */
    this.handedOff = new Set();
  }

  /**
   * @param {number} worker
   * @param {WorkerMessage} message
   * @returns {boolean} whether the message was an answer of this nemesis
   */
  onMessage(worker, message) {
    if (message?.type === 'handle') {
      if (message.handle) this.handedOff.add(message.handle.fencingToken);
      this.answers.set(`handOff:${worker}:${message.token}`, message);
    } else if (message?.type === 'adoption') {
      this.answers.set(message.label, message);
    } else {
      return false;
    }
    return true;
  }
}

/**
 * The handle with one hex digit of its token's random part changed: the same shape and owner,
 * a hold that does not exist.
 * @param {LockHandle} handle
 */
function changedToken(handle) {
  const { token } = handle;
  const owner = token.indexOf('@');
  const i = (owner < 0 ? token.length : owner) - 1;
  return {
    ...handle,
    token: token.slice(0, i) + (token[i] === '0' ? '1' : '0') + token.slice(i + 1),
  };
}

/**
 * Has the holder of `read`'s section hand its lock off, presents forged copies of the handle
 * and then the genuine one for adoption, and checks what came of each.
 * @param {SafetyChecker} checker
 * @param {Fault} fault
 * @param {WorkerHandle} worker
 * @param {ReadRequest} read
 */
export async function forgeHandOff(checker, fault, worker, read) {
  const answers = checker.handOffs.answers;
  const asked = `handOff:${worker.id}:${fault.token}`;
  worker.child.send({ type: 'handOff', token: fault.token }, () => undefined);
  await checker.waitFor(() => answers.has(asked), ANSWER_BOUND_MS);
  const handle = answers.get(asked)?.handle;
  if (!handle) {
    // A lock lost before its hand-off (a starved process) is no fault of the hand-off's.
    const error = answers.get(asked)?.error;
    fault.facts.handOff = error ?? 'unanswered';
    if (error !== 'LockLostError')
      fault.problems.push(`the hand-off failed: ${error ?? 'no answer'}`);
    checker.serveRead(worker, read);
    return;
  }
  checker.reply(worker, read.requestId, { ok: false, value: 0 });
  const [forger, changer, adopter] = shuffled(
    checker.liveWorkers().filter((other) => other !== worker),
  );
  const n = checker.faults.length;
  const forged = await Promise.all([
    present(checker, forger, `${n}:fencing`, {
      ...handle,
      fencingToken: handle.fencingToken + RAISED_BY,
    }),
    present(checker, changer, `${n}:token`, changedToken(handle)),
  ]);
  const [fencing, token] = forged;
  Object.assign(fault.facts, {
    fencingRefusal: fencing.error ?? 'adopted',
    tokenRefusal: token.error ?? 'adopted',
  });
  if (fencing.fencingToken !== undefined) {
    fault.problems.push(
      `worker ${forger.id} adopted a handle whose fencing token was raised by ${RAISED_BY}`,
    );
  }
  if (token.fencingToken !== undefined) {
    fault.problems.push(`worker ${changer.id} adopted a handle whose token was changed`);
  }
  await untilEnded(checker, fault, forged, [forger, changer]);
  const genuine = await present(checker, adopter, `${n}:genuine`, handle);
  fault.facts.genuine = genuine.fencingToken !== undefined ? 'adopted' : genuine.error;
  if (genuine.fencingToken === undefined) {
    // A handle whose lock lapsed before it was adopted is refused: the lock was nobody's.
    if (genuine.error !== 'LockLostError') {
      fault.problems.push(`the genuine handle was refused: ${genuine.error}: ${genuine.message}`);
    }
    return;
  }
  await untilEnded(checker, fault, [genuine], [adopter]);
  const section = checker.section(adopter.id, handle.fencingToken);
  fault.facts.genuineWriteAccepted = section?.writeAccepted === true;
  if (!section?.writeAccepted) {
    fault.problems.push(
      `the adopter of the genuine handle had its ${section?.readAccepted ? 'write' : 'read'} refused`,
    );
  }
}

/**
 * Presents `handle` to `worker` for adoption; resolves its answer (an error when it did not
 * answer in time, or is gone).
 * @param {SafetyChecker} checker
 * @param {WorkerHandle | undefined} worker
 * @param {string} label
 * @param {LockHandle} handle
 * @returns {Promise<Answer>}
 */
async function present(checker, worker, label, handle) {
  if (!worker) return { error: 'no worker', message: 'no worker was there to adopt it' };
  worker.child.send({ type: 'adopt', label, handle }, () => undefined);
  const answers = checker.handOffs.answers;
  await checker.waitFor(() => answers.has(label) || worker.exited, ANSWER_BOUND_MS);
  return (
    answers.get(label) ?? { error: 'unanswered', message: `worker ${worker.id} did not answer` }
  );
}

/**
 * Waits until the sections run under the locks adopted by `answers` (one per worker) ended.
 * @param {SafetyChecker} checker
 * @param {Fault} fault
 * @param {Answer[]} answers
 * @param {(WorkerHandle | undefined)[]} workers
 */
async function untilEnded(checker, fault, answers, workers) {
  const sections = answers.flatMap((answer, i) => {
    const worker = workers[i];
    return answer.fencingToken !== undefined && worker ? [[worker.id, answer.fencingToken]] : [];
  });
  const ended = await checker.waitFor(
    () => sections.every(([id, token]) => checker.section(id, token)?.releasedSeq !== undefined),
    15_000,
  );
  if (!ended) fault.problems.push('an adopted lock’s section did not end within 15 s');
}

/**
 * The hand-offs' figures, and a violation for every section under an adopted lock whose
 * fencing token no hand-off gave.
 * @param {SafetyChecker} checker
 * @param {string[]} violations
 */
export function analyzeForges(checker, violations) {
  const handedOff = checker.handOffs.handedOff;
  const forgedHolds = checker.sectionList.filter((s) => s.adopted && !handedOff.has(s.token));
  for (const s of forgedHolds) {
    violations.push(
      `worker ${s.worker} held the lock under a forged handle (fencing token ${s.token})`,
    );
  }
  const forges = checker.faults.filter((f) => f.kind === 'forge');
  const facts = (/** @type {string} */ name) => forges.map((f) => f.facts[name]);
  return {
    forgeFaults: forges.length,
    forgeHandedOff: handedOff.size,
    /** Forged fencing tokens refused by the adopter's proof against the store. */
    forgeFencingProved: facts('fencingRefusal').filter((e) => e === 'LockOptionsError').length,
    forgeFencingRefusals: facts('fencingRefusal'),
    forgeTokenRefusals: facts('tokenRefusal'),
    forgeGenuine: facts('genuine'),
    forgeGenuineWritten: facts('genuineWriteAccepted').filter((w) => w === true).length,
    forgedHolds: forgedHolds.length,
  };
}

/**
 * The summary's line for the hand-offs, if any ran.
 * @param {ReturnType<typeof analyzeForges>} r
 * @param {(values: unknown[]) => string} tally
 */
export function forgeLines(r, tally) {
  if (!r.forgeFaults) return [];
  return [
    `  forge                  ${r.forgeFaults}: ${r.forgeHandedOff} locks handed off; forged ` +
      `copies refused: fencing token raised ${tally(r.forgeFencingRefusals)}, token changed ` +
      `${tally(r.forgeTokenRefusals)}; held under a forged handle ${r.forgedHolds}; genuine ` +
      `handle ${tally(r.forgeGenuine)}, its write accepted ${r.forgeGenuineWritten}`,
  ];
}
