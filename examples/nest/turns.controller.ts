import { BadRequestException, Controller, Headers, Inject, Param, Query, Sse } from '@nestjs/common';
import type { TurnMessage } from 'cleanturn/transport';
import type { Observable } from 'rxjs';
import { TurnsService } from './turns.service.js';

@Controller('turns')
export class TurnsController {
  constructor(@Inject(TurnsService) private readonly turns: TurnsService) {}

  /**
   * `GET /turns/:id?message=…`: the turn as server-sent events. The first request starts it; a client that lost
   * its connection comes back with the same URL and `Last-Event-ID`, and reads on where it was cut off.
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
