export { threadWorkflow } from './thread';
export { threadlineInspectStep } from './inspect-step';
