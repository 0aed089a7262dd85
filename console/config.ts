/**
 * What the gateway tells the console about itself: inlined in the page as JSON by `gateway/console.ts`.
 */
export interface ConsoleConfig {
  /** API keys are configured: ask for one before anything else. */
  authRequired: boolean;
  /** Base URL of the Temporal Web UI. */
  temporalUiUrl: string;
  /** The Temporal namespace of this gateway's threads. */
  namespace: string;
}

export function readConfig(doc: Document = document): ConsoleConfig {
  const element = doc.getElementById('threadline-console-config');
  const parsed = element?.textContent ? (JSON.parse(element.textContent) as Partial<ConsoleConfig>) : {};
  return {
    authRequired: parsed.authRequired ?? false,
    temporalUiUrl: (parsed.temporalUiUrl ?? 'http://127.0.0.1:8233').replace(/\/+$/, ''),
    namespace: parsed.namespace ?? 'default',
  };
}

/** The thread's workflow in the Temporal Web UI (its latest execution: the thread continues as new now and then). */
export function temporalWorkflowUrl(config: ConsoleConfig, workflowId: string): string {
  return `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
