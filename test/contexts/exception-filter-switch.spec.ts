import {
  Controller,
  Param,
  Post,
  UseFilters,
  type DynamicModule,
  type INestApplication,
  type Type,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Server } from 'node:http';
import request from 'supertest';
import { LockExceptionFilter, LockModule, LockService, WithLock } from '../../src/index.js';
import { uniquePrefix } from '../support/lock-app.js';
import { conflictBody } from './orders.js';

@Controller('orders/:id')
class OrdersController {
  @Post('edit')
  @WithLock('order:<id>')
  edit(@Param('id') id: string) {
    return { edited: id };
  }
}

/** The same route, with the filter bound by the app itself. */
@Controller('orders/:id')
@UseFilters(LockExceptionFilter)
class FilteredOrdersController {
  @Post('edit')
  @WithLock('order:<id>')
  edit(@Param('id') id: string) {
    return { edited: id };
  }
}

/** How an app serving `controller` under `lockModule` answers an edit of a held order. */
async function answerToHeldOrder(lockModule: DynamicModule, controller: Type) {
  const module = await Test.createTestingModule({
    imports: [lockModule],
    controllers: [controller],
  }).compile();
  const app: INestApplication<Server> = module.createNestApplication({ logger: false });
  await app.init();
  const held = await app.get(LockService).acquire('order:1');
  try {
    const response = await request(app.getHttpServer()).post('/orders/1/edit');
    return { status: response.status, body: response.body as unknown };
  } finally {
    await held.release();
    await app.close();
  }
}

const options = () => ({ store: 'memory' as const, keyPrefix: uniquePrefix() });
const nestDefault = { statusCode: 500, message: 'Internal server error' };

describe('the exception filter LockModule registers for the whole app', () => {
  it('answers a held lock with 409 by default', async () => {
    const answer = await answerToHeldOrder(LockModule.forRoot(options()), OrdersController);
    expect(answer).toEqual({ status: 409, body: conflictBody('1') });
  });

  it('is not registered with exceptionFilter: false, so Nest answers as for any error', async () => {
    const lockModule = LockModule.forRoot({ ...options(), exceptionFilter: false });
    const answer = await answerToHeldOrder(lockModule, OrdersController);
    expect(answer).toEqual({ status: 500, body: nestDefault });
  });

  it('is not registered with exceptionFilter: false beside an async factory either', async () => {
    const lockModule = LockModule.forRootAsync({ useFactory: options, exceptionFilter: false });
    const answer = await answerToHeldOrder(lockModule, OrdersController);
    expect(answer).toEqual({ status: 500, body: nestDefault });
  });

  it('can still be bound by the app where it wants it, with @UseFilters', async () => {
    const lockModule = LockModule.forRoot({ ...options(), exceptionFilter: false });
    const answer = await answerToHeldOrder(lockModule, FilteredOrdersController);
    expect(answer).toEqual({ status: 409, body: conflictBody('1') });
  });
});
