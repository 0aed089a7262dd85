/**
 * Keeps the execution's search attributes and current details in step with the thread. Called by the main loop only
 * (handlers record, the loop decides), once per iteration: the upserts of everything that changed meanwhile go out as
 * one command, and nothing at all when nothing changed, so a one-step turn writes two (run start, run end).
 */
import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { agentSearchAttribute, searchAttributeChanges, threadSearchValues } from '../protocol/search-attributes';
import { currentDetails } from '../protocol/summaries';
import type { ThreadState } from './state';

export function syncSearchAttributes(thread: ThreadState): void {
  const view = thread.view();
  // What the execution has: its start's attributes (set by the client, or carried over by continue-as-new) with the
  // upserts so far applied. Read from workflow info, so replay decides the same.
  const current = workflowInfo().typedSearchAttributes;
  const lastAgent = current.get(agentSearchAttribute) ?? null;
  const changes = searchAttributeChanges(
    current,
    threadSearchValues(view, { lastAgent, lastInputAt: thread.lastInputAt }),
  );
  if (changes.length > 0) upsertSearchAttributes(changes);
  // Not in history: the UI reads it with the workflow metadata query.
  setCurrentDetails(currentDetails(view));
}
