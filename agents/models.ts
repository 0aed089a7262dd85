/**
 * Model resolution: `provider/model` strings through the AI SDK provider registry (`openai/…`, the offline `demo`
 * model, and any provider a user registers), or an AI SDK model object as is.
 */
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV3, LanguageModelV3StreamPart, ProviderV3 } from '@ai-sdk/provider';
import {
  createProviderRegistry,
  customProvider,
  NoSuchModelError,
  NoSuchProviderError,
  type LanguageModel,
  type ProviderRegistryProvider,
} from 'ai';
import { ValidationError } from '../protocol/errors';

export interface ModelSettings {
  /** `provider/model`; unset → `openai/gpt-4o-mini` when an OpenAI key or base URL is set, else `demo`. */
  model?: string;
  openaiApiKey?: string;
  /** An OpenAI-compatible server (Ollama, vLLM, llama.cpp); default `https://api.openai.com/v1`. */
  openaiBaseUrl?: string;
  /**
   * More AI SDK providers by id, for `id/model` names. `openai` and `demo` are built in; a provider registered under
   * one of those ids replaces it.
   *
   * @example
   * import { anthropic } from '@ai-sdk/anthropic';
   * // A whole worker: agents may now say `model: 'anthropic/claude-sonnet-4-5'`.
   * await createWorker({ agents, bus, models: { ...settings.models, providers: { anthropic } } });
   * // Or directly:
   * new ModelResolver({ providers: { anthropic } }).resolve('anthropic/claude-sonnet-4-5');
   */
  providers?: Record<string, ProviderV3>;
  /**
   * The `fetch` the built-in `openai` provider sends its requests with (default: the global one). Time travel passes
   * one that records the request body and sends nothing (worker/inspect.ts).
   */
  fetch?: typeof globalThis.fetch;
}

export function defaultModelName(settings: ModelSettings): string {
  if (settings.model) return settings.model;
  return settings.openaiApiKey || settings.openaiBaseUrl ? 'openai/gpt-4o-mini' : 'demo';
}

const OPENAI_API_URL = 'https://api.openai.com/v1';

/** Turns `provider/model` names into AI SDK models, once per name. */
export class ModelResolver {
  private readonly cache = new Map<string, LanguageModel>();
  private readonly registry: ProviderRegistryProvider<Record<string, ProviderV3>, '/'>;
  private readonly providerIds: string[];

  constructor(private readonly settings: ModelSettings = {}) {
    const providers = { openai: openaiChatProvider(settings), demo: demoProvider(), ...settings.providers };
    this.providerIds = Object.keys(providers);
    this.registry = createProviderRegistry(providers, { separator: '/' });
  }

  resolve(spec: string | LanguageModel | undefined): LanguageModel {
    if (spec !== undefined && typeof spec !== 'string') return spec;
    const name = spec ?? defaultModelName(this.settings);
    let model = this.cache.get(name);
    if (!model) {
      model = this.create(name);
      this.cache.set(name, model);
    }
    return model;
  }

  private create(name: string): LanguageModel {
    const id = name === 'demo' ? 'demo/demo' : name;
    const slash = id.indexOf('/');
    if (slash <= 0 || slash === id.length - 1) {
      throw new ValidationError(
        `Invalid model "${name}": name it "provider/model" (e.g. "openai/gpt-4o-mini"), or "demo" for the offline demo model.`,
      );
    }
    try {
      return this.registry.languageModel(id as `${string}/${string}`);
    } catch (err) {
      const providerId = id.slice(0, slash);
      if (NoSuchProviderError.isInstance(err)) {
        throw new ValidationError(
          `Unknown model provider "${providerId}" in model "${name}" (registered: ${this.providerIds.join(', ')}). ` +
            `Register its AI SDK provider: new ModelResolver({ providers: { ${providerId}: yourProvider } }), or ` +
            `createWorker({ models: { providers: { ${providerId}: yourProvider } } }).`,
          { cause: err },
        );
      }
      if (NoSuchModelError.isInstance(err)) {
        throw new ValidationError(`Provider "${providerId}" has no model "${id.slice(slash + 1)}".`, { cause: err });
      }
      throw err;
    }
  }
}

/** OpenAI, or any OpenAI-compatible server, with the key and base URL from settings (never from the environment). */
function openaiChatProvider(settings: ModelSettings): ProviderV3 {
  const openai = createOpenAI({
    apiKey: settings.openaiApiKey ?? 'not-needed',
    baseURL: settings.openaiBaseUrl ?? OPENAI_API_URL,
    ...(settings.fetch ? { fetch: settings.fetch } : {}),
  });
  return {
    specificationVersion: 'v3',
    // The chat-completions endpoint: the de-facto standard of OpenAI-compatible servers (Ollama, vLLM, llama.cpp).
    languageModel: (modelId) => openai.chat(modelId),
    embeddingModel: (modelId) => openai.embeddingModel(modelId),
    imageModel: (modelId) => openai.imageModel(modelId),
  };
}

/** The offline demo model as a provider: `demo` (`demo/demo`), and `demo/<any name>` for the same model. */
export function demoProvider(delayMs = 40): ProviderV3 {
  // Any other language model name is the demo model under that name; other model kinds throw NoSuchModelError.
  const anyName = { ...customProvider({}), languageModel: (modelId: string) => demoModel(delayMs, modelId) };
  return customProvider({ languageModels: { demo: demoModel(delayMs) }, fallbackProvider: anyName });
}

/**
 * The offline demo model: no network, no key. It streams a short reply that quotes the last user input, word by
 * word, so a newcomer sees the whole system move. Announced at start-up.
 */
export function demoModel(delayMs = 40, modelId = 'demo'): LanguageModelV3 {
  return {
    specificationVersion: 'v3',
    provider: 'demo',
    modelId,
    supportedUrls: {},
    async doGenerate() {
      throw new Error('The demo model only streams.');
    },
    async doStream(options) {
      const last = [...options.prompt].reverse().find((m) => m.role === 'user');
      const said =
        last && Array.isArray(last.content)
          ? last.content
              .filter((p) => p.type === 'text')
              .map((p) => (p as { text: string }).text)
              .join(' ')
          : '';
      const reply = `(demo model) You said: ${said.slice(0, 400)}. Set OPENAI_API_KEY and MODEL=openai/gpt-4o-mini for a real answer.`;
      const words = reply.split(/(?<= )/);
      const signal = options.abortSignal;
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        async start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'text-start', id: 't0' });
          for (const word of words) {
            if (signal?.aborted) {
              controller.error(signal.reason ?? new Error('aborted'));
              return;
            }
            await new Promise((r) => setTimeout(r, delayMs));
            controller.enqueue({ type: 'text-delta', id: 't0', delta: word });
          }
          controller.enqueue({ type: 'text-end', id: 't0' });
          controller.enqueue({
            type: 'finish',
            finishReason: { unified: 'stop', raw: 'stop' },
            usage: {
              inputTokens: { total: said.length, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
              outputTokens: { total: words.length, text: words.length, reasoning: undefined },
            },
          });
          controller.close();
        },
      });
      return { stream };
    },
  };
}
