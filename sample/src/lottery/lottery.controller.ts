import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { integerField, type RequestBody } from '../common/request-body.js';
import { LotteryService, type Account, type DrawResult } from './lottery.service.js';

@Controller('lottery')
export class LotteryController {
  constructor(private readonly lottery: LotteryService) {}

  /** Adds `{ points }` to the user's balance. */
  @Post(':userId/points')
  grant(@Param('userId') userId: string, @Body() body: RequestBody): Promise<Account> {
    return this.lottery.grant(userId, integerField(body, 'points', { min: 1, max: 1_000_000 }));
  }

  @Post(':userId/draw-unsafe')
  @HttpCode(200)
  drawUnsafe(@Param('userId') userId: string): Promise<DrawResult> {
    return this.lottery.drawUnsafe(userId);
  }

  @Post(':userId/draw')
  @HttpCode(200)
  draw(@Param('userId') userId: string): Promise<DrawResult> {
    return this.lottery.draw(userId);
  }

  @Get(':userId')
  account(@Param('userId') userId: string): Promise<Account> {
    return this.lottery.account(userId);
  }
}
