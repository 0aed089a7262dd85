/** The operator commands of `threadline`, one group per module (worker/cli.ts registers them). */
export { doctorCommand } from './doctor';
export { historyCommand } from './history';
export { inboxCommand } from './inbox';
export { abortCommand, approveCommand, declineCommand, queueCommand, sendCommand, signalCommand } from './inputs';
export { messagesCommand, tailCommand, threadCommand, threadsCommand } from './threads';
export { forkCommand, inspectCommand } from './time-travel';
export { EXIT, UsageError, type Command, type CommandContext, type CommandGroup } from './command';
