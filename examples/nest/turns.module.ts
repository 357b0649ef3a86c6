import { type DynamicModule, Module } from '@nestjs/common';
import { Payments } from './payments.js';
import { TurnsController } from './turns.controller.js';
import { TURNS_OPTIONS, type TurnsOptions, TurnsService } from './turns.service.js';

@Module({})
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module is a class, and forRoot() is how it takes options
export class TurnsModule {
  static forRoot(options: TurnsOptions): DynamicModule {
    return {
      module: TurnsModule,
      controllers: [TurnsController],
      providers: [{ provide: TURNS_OPTIONS, useValue: options }, Payments, TurnsService],
      exports: [Payments, TurnsService],
    };
  }
}
