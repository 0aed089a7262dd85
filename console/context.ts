/**
 * What every page reads: the gateway's console settings and the API client with the user's key.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ConsoleApi } from './api';
import type { ConsoleConfig } from './config';
import type { AgentSummary } from '../protocol/api';

export interface AppContextValue {
  config: ConsoleConfig;
  api: ConsoleApi;
  /** The agents the gateway lists (empty until loaded). */
  agents: AgentSummary[];
}

export const AppContext = createContext<AppContextValue | null>(null);

export function useApp(): AppContextValue {
  const value = useContext(AppContext);
  if (!value) throw new Error('useApp() outside <AppContext.Provider>.');
  return value;
}
