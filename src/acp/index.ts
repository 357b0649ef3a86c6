/**
 * The Agent Client Protocol adapter: the clean turn as ACP `session/update` notifications, with resets made
 * explicit for editors. Types come from `@agentclientprotocol/sdk` (an optional peer dependency).
 *
 * @module
 */
export type { AcpResetMeta } from './acpMetaKeys.js';
export { acpMetaKeys } from './acpMetaKeys.js';
export type {
  AcpNotification,
  AcpSourceEvent,
  AcpV2Notification,
  ToAcpUpdatesOptions,
  ToolResultLike,
} from './toAcpUpdates.js';
export { toAcpUpdates } from './toAcpUpdates.js';
