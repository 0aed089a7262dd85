/**
 * The Threadline web console: served by the gateway at `/console` (`gateway/console.ts` bundles this file with
 * esbuild on first request). docs/console.md describes it.
 */
import { render } from 'preact';
import { App } from './app';
import { readConfig } from './config';
import './styles.css';

render(<App config={readConfig()} />, document.getElementById('app')!);
