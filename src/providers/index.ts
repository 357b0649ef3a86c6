/**
 * Adapters from the providers' streamed wire formats to cleanturn's neutral `ProviderEvent`s.
 *
 * @module
 */

export type { ProviderName } from './errors.js';
export { ProviderError } from './errors.js';
