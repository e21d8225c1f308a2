import { BadRequestException, Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { WithLock } from 'nestjs-redis-lock';
import { STATE_STORE, type StateStore } from '../state/state-store.js';

const PRIZES = ['sticker', 'mug', 'T-shirt', 'gift card'];

/**
 * How long picking a prize takes: the window in which unlocked draws overlap. Wide enough that
 * concurrent requests overlap on a busy machine too, which parses them one after another.
 */
const DRAW_WORK_MS = 200;

export interface DrawResult {
  prize: string;
  balance: number;
}

export interface Account {
  balance: number;
  prizes: string[];
}

/**
 * The lottery: one point buys one draw. A draw reads the balance, checks it, picks a prize
 * and only then deducts the point, so two draws that overlap both pass the check.
 */
@Injectable()
export class LotteryService {
  constructor(@Inject(STATE_STORE) private readonly state: StateStore) {}

  /** Adds points to a user's balance; an atomic increment needs no lock. */
  async grant(userId: string, points: number): Promise<Account> {
    await this.state.increment(pointsKey(userId), points);
    return this.account(userId);
  }

  /** A draw with no lock: concurrent draws of one user each spend the same point. */
  drawUnsafe(userId: string): Promise<DrawResult> {
    return this.drawOnce(userId);
  }

  /** The same draw, one at a time per user across every process; a concurrent one gets 409. */
  @WithLock('lottery:<userId>')
  async draw(userId: string): Promise<DrawResult> {
    return this.drawOnce(userId);
  }

  async account(userId: string): Promise<Account> {
    const [points, prizes] = await Promise.all([
      this.state.get(pointsKey(userId)),
      this.state.list(prizesKey(userId)),
    ]);
    return { balance: Number(points ?? 0), prizes };
  }

  private async drawOnce(userId: string): Promise<DrawResult> {
    const { balance } = await this.account(userId);
    if (balance < 1) {
      throw new BadRequestException(`User "${userId}" has no points left (balance ${balance})`);
    }
    await sleep(DRAW_WORK_MS);
    const prize = PRIZES[Math.floor(Math.random() * PRIZES.length)];
    const left = await this.state.increment(pointsKey(userId), -1);
    await this.state.append(prizesKey(userId), prize);
    return { prize, balance: left };
  }
}

const pointsKey = (userId: string) => `lottery:${userId}:points`;
const prizesKey = (userId: string) => `lottery:${userId}:prizes`;
