import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { stringField, type RequestBody } from '../common/request-body.js';
import { SubmissionsService, type Submission } from './submissions.service.js';

@Controller('assignments/:assignmentId/submissions')
export class SubmissionsController {
  constructor(private readonly submissions: SubmissionsService) {}

  /** Submits `{ userId, content? }`; at most once per user and assignment every 5 s. */
  @Post()
  submit(
    @Param('assignmentId') assignmentId: string,
    @Body() body: RequestBody,
  ): Promise<Submission> {
    const userId = stringField(body, 'userId');
    return this.submissions.submit(userId, assignmentId, stringField(body, 'content', '(empty)'));
  }

  /** The submissions of `?userId=` for the assignment. */
  @Get()
  list(
    @Param('assignmentId') assignmentId: string,
    @Query('userId') userId: unknown,
  ): Promise<Submission[]> {
    return this.submissions.list(stringField({ userId }, 'userId'), assignmentId);
  }
}
