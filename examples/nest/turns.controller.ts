import {
  BadRequestException,
  Body,
  Controller,
  Headers,
  Inject,
  Param,
  Query,
  RequestMethod,
  Sse,
} from '@nestjs/common';
import type { TurnMessage } from 'cleanturn/transport';
import type { Observable } from 'rxjs';
import { TurnsService } from './turns.service.js';

@Controller('turns')
export class TurnsController {
  constructor(@Inject(TurnsService) private readonly turns: TurnsService) {}

  /**
   * `POST /turns/:id` with the JSON body `{ "message": "…" }`: the turn as server-sent events. The first request
   * starts it; a client that lost its connection posts the same request again with `Last-Event-ID`, and reads on
   * where it was cut off (the turn id decides: a reconnect's message is not read again).
   */
  @Sse(':id', { method: RequestMethod.POST })
  start(
    @Param('id') turnId: string,
    @Body() body: { message?: unknown } | undefined,
    @Headers('last-event-id') lastEventId: string | undefined,
  ): Observable<TurnMessage> {
    const message = body?.message;
    if (typeof message !== 'string' || message === '')
      throw new BadRequestException('the body must be JSON: { "message": "…" }');
    return this.turns.serve(turnId, message, lastEventId);
  }

  /**
   * `GET /turns/:id?message=…`: the same turn for a client that can only GET (curl, a browser's `EventSource`),
   * with the message in the URL.
   */
  @Sse(':id')
  stream(
    @Param('id') turnId: string,
    @Query('message') message: string | undefined,
    @Headers('last-event-id') lastEventId: string | undefined,
  ): Observable<TurnMessage> {
    if (!message) throw new BadRequestException('?message= is required');
    return this.turns.serve(turnId, message, lastEventId);
  }
}
