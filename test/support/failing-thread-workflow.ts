/**
 * A stand-in for the thread workflow whose every workflow task fails (test/workflow/task-retry-delivery.test.ts): a
 * worker running it keeps a thread's task on retry attempts, and Temporal refuses updates to the thread from the
 * third attempt ("Workflow Task in failed state") until a worker with the real workflow completes one.
 */
export async function threadWorkflow(): Promise<void> {
  throw new Error('This worker fails every workflow task on purpose (a test of delivery while a task is retried).');
}
