/**
 * The Agent Client Protocol adapter: the clean turn as ACP `session/update` notifications, with resets made
 * explicit for editors. Types come from `@agentclientprotocol/sdk` (an optional peer dependency).
 *
 * @module
 */

export { acpMetaKeys } from './acpMetaKeys.js';
export { toAcpUpdates } from './toAcpUpdates.js';
