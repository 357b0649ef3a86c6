/**
 * The Agent Client Protocol adapter: the clean turn as ACP `session/update` notifications, with resets made
 * explicit for editors. Types come from `@agentclientprotocol/sdk` (an optional peer dependency).
 *
 * @module
 */

// The executor's result events, defined by the core and read here.
export type { ToolResultLike } from 'cleanturn';
export type { AcpResetMeta } from './acpMetaKeys.js';
export { acpMetaKeys } from './acpMetaKeys.js';
export type {
  AcpNotification,
  AcpSourceEvent,
  AcpV2Notification,
  ToAcpUpdatesOptions,
} from './toAcpUpdates.js';
export { toAcpUpdates } from './toAcpUpdates.js';
