/**
 * Model resolution: `provider/model` strings through the AI SDK, or the offline demo model.
 */
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import type { LanguageModel } from 'ai';

export interface ModelSettings {
  /** `provider/model`; unset → `openai/gpt-4o-mini` when an OpenAI key or base URL is set, else `demo`. */
  model?: string;
  openaiApiKey?: string;
  openaiBaseUrl?: string;
}

export function modelSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): ModelSettings {
  return { model: env.MODEL || undefined, openaiApiKey: env.OPENAI_API_KEY, openaiBaseUrl: env.OPENAI_BASE_URL };
}

export function defaultModelName(settings: ModelSettings): string {
  if (settings.model) return settings.model;
  return settings.openaiApiKey || settings.openaiBaseUrl ? 'openai/gpt-4o-mini' : 'demo';
}

export class ModelResolver {
  private readonly cache = new Map<string, LanguageModel>();

  constructor(private readonly settings: ModelSettings) {}

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
    if (name === 'demo' || name === 'threadline/demo') return demoModel();
    const slash = name.indexOf('/');
    const provider = slash > 0 ? name.slice(0, slash) : '';
    const modelId = name.slice(slash + 1);
    if (provider === 'openai') {
      // The chat-completions endpoint: the de-facto standard of OpenAI-compatible servers (Ollama, vLLM, llama.cpp).
      return createOpenAI({
        apiKey: this.settings.openaiApiKey ?? 'not-needed',
        baseURL: this.settings.openaiBaseUrl,
      }).chat(modelId);
    }
    throw new Error(
      `Unsupported model "${name}". Use "openai/<model>" (with OPENAI_API_KEY or OPENAI_BASE_URL for any OpenAI-compatible server) or "demo".`,
    );
  }
}

/**
 * The offline demo model: no network, no key. It streams a short reply that quotes the last user input, word by
 * word, so a newcomer sees the whole system move. Announced at start-up.
 */
export function demoModel(delayMs = 40): LanguageModelV3 {
  return {
    specificationVersion: 'v3',
    provider: 'threadline',
    modelId: 'demo',
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
