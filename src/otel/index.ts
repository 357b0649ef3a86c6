/**
 * OpenTelemetry tracing and metrics of cleanturn turns, by the GenAI semantic conventions: `turnTelemetry()` makes
 * the observer that `streamTurn` (`cleanturn/transport`) and `executeTools` (`cleanturn/effects`) take as their
 * `telemetry` option. Needs the optional peer dependency `@opentelemetry/api`.
 *
 * @module
 */
export { turnTelemetry } from './turnTelemetry.js';
