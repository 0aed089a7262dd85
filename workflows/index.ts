export { threadWorkflow } from './thread';
