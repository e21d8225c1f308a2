import { unwrapResolverError } from '@apollo/server/errors';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import type { INestApplication } from '@nestjs/common';
import { Args, Field, GraphQLModule, Mutation, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Server } from 'node:http';
import request from 'supertest';
import { LockNotAcquiredError, WithLock } from '../../src/index.js';
import {
  anyNumber,
  beginShutdown,
  conflictMessage,
  lockModule,
  shuttingDownMessage,
  SUBMIT_WINDOW_MS,
  throttleMessage,
  whileOrderHeld,
  withinWindow,
} from './orders.js';

@ObjectType()
class Order {
  @Field()
  id!: string;
}

@Resolver(() => Order)
class OrdersResolver {
  @Query(() => Order)
  order(@Args('id') id: string): Order {
    return { id };
  }

  @Mutation(() => Order)
  @WithLock('order:<id>')
  editOrder(@Args('id') id: string): Order {
    return { id };
  }

  @Mutation(() => Order)
  @WithLock('submit:<id>', { holdFor: SUBMIT_WINDOW_MS })
  submitOrder(@Args('id') id: string): Order {
    return { id };
  }
}

describe('a held lock in a GraphQL (Apollo) resolver', () => {
  let module: TestingModule;
  let app: INestApplication<Server>;
  /** What an app's own `formatError` is given, unwrapped. */
  const formatted: unknown[] = [];

  beforeAll(async () => {
    module = await Test.createTestingModule({
      imports: [
        lockModule(),
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          autoSchemaFile: true,
          // The shapes below are those of production, where Apollo adds no stack traces.
          includeStacktraceInErrorResponses: false,
          formatError: (error, original) => {
            formatted.push(unwrapResolverError(original));
            return error;
          },
        }),
      ],
      providers: [OrdersResolver],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });

  afterAll(() => app.close());

  const mutate = async (field: string, id: string) => {
    const response = await request(app.getHttpServer())
      .post('/graphql')
      .send({ query: `mutation { ${field}(id: "${id}") { id } }` });
    expect(response.status).toBe(200);
    return response.body as { data: unknown; errors?: { extensions: Record<string, unknown> }[] };
  };

  it('answers with a CONFLICT error', async () => {
    await whileOrderHeld(module, '1', async () => {
      expect(await mutate('editOrder', '1')).toEqual({
        data: null,
        errors: [
          {
            message: conflictMessage('1'),
            locations: [{ line: 1, column: 12 }],
            path: ['editOrder'],
            extensions: { code: 'CONFLICT' },
          },
        ],
      });
    });
    expect(formatted.at(-1)).toBeInstanceOf(LockNotAcquiredError);
    expect(formatted.at(-1)).toMatchObject({
      name: 'LockNotAcquiredError',
      key: 'order:1',
      throttled: false,
    });
    expect(await mutate('editOrder', '1')).toEqual({ data: { editOrder: { id: '1' } } });
  });

  it('answers a call within a holdFor window with TOO_MANY_REQUESTS and the time left', async () => {
    expect(await mutate('submitOrder', '2')).toEqual({ data: { submitOrder: { id: '2' } } });
    const body = await mutate('submitOrder', '2');
    expect(body).toEqual({
      data: null,
      errors: [
        {
          message: throttleMessage('2'),
          locations: [{ line: 1, column: 12 }],
          path: ['submitOrder'],
          extensions: { code: 'TOO_MANY_REQUESTS', retryAfterMs: anyNumber },
        },
      ],
    });
    withinWindow(body.errors?.[0]?.extensions.retryAfterMs);
  });

  // Last: the app takes no more locks.
  it('answers with a SERVICE_UNAVAILABLE error once shutdown has begun', async () => {
    await beginShutdown(module);
    expect(await mutate('editOrder', '3')).toEqual({
      data: null,
      errors: [
        {
          message: shuttingDownMessage('3'),
          locations: [{ line: 1, column: 12 }],
          path: ['editOrder'],
          extensions: { code: 'SERVICE_UNAVAILABLE' },
        },
      ],
    });
    expect(formatted.at(-1)).toMatchObject({ name: 'LockShuttingDownError', key: 'order:3' });
  });
});
