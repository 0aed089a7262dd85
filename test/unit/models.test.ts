import { customProvider, streamText } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ModelResolver } from '../../agents/models';
import { ValidationError } from '../../protocol/errors';
import { startModelServer } from '../support/model-server';

async function reply(resolver: ModelResolver, name: string | undefined, prompt: string): Promise<string> {
  const result = streamText({ model: resolver.resolve(name), prompt, maxRetries: 0 });
  return await result.text;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('ModelResolver', () => {
  it('uses a registered provider for its "id/model" names', async () => {
    const x = new MockLanguageModelV3({ provider: 'myprov', modelId: 'x' });
    const resolver = new ModelResolver({ providers: { myprov: customProvider({ languageModels: { x } }) } });

    expect(resolver.resolve('myprov/x')).toBe(x);
  });

  it('names an unknown provider and says how to register one', () => {
    const resolver = new ModelResolver({});

    const error = (() => {
      try {
        resolver.resolve('nope/some-model');
      } catch (err) {
        return err as Error;
      }
    })();

    expect(error).toBeInstanceOf(ValidationError);
    expect(error?.message).toContain('Unknown model provider "nope" in model "nope/some-model"');
    expect(error?.message).toContain('registered: openai, demo');
    expect(error?.message).toContain('providers: { nope: yourProvider }');
  });

  it('refuses a name without a provider, naming the expected form', () => {
    expect(() => new ModelResolver({}).resolve('gpt-4o-mini')).toThrow(
      'Invalid model "gpt-4o-mini": name it "provider/model"',
    );
  });

  it('runs the offline demo model as "demo", "demo/<name>" and the default without OpenAI settings', async () => {
    const resolver = new ModelResolver({});

    expect(await reply(resolver, 'demo', 'hello')).toContain('(demo model) You said: hello');
    expect(await reply(resolver, 'demo/fast', 'again')).toContain('(demo model) You said: again');
    expect(await reply(resolver, undefined, 'default')).toContain('(demo model) You said: default');
    expect(resolver.resolve('demo/fast')).toMatchObject({ provider: 'demo', modelId: 'fast' });
  }, 20_000);

  it('calls an OpenAI-compatible server at the base URL from settings, whatever OPENAI_BASE_URL says', async () => {
    const server = await startModelServer();
    try {
      vi.stubEnv('OPENAI_BASE_URL', 'http://127.0.0.1:9/v1');
      server.enqueue({ text: 'from the model server' });
      const resolver = new ModelResolver({ openaiBaseUrl: server.url, openaiApiKey: 'test' });

      expect(await reply(resolver, 'openai/test-model', 'hi')).toBe('from the model server');
      expect(server.requests[0].model).toBe('test-model');
    } finally {
      await server.close();
    }
  });

  it('returns the same model for the same name and passes model objects through', () => {
    const resolver = new ModelResolver({ openaiApiKey: 'test' });
    const own = new MockLanguageModelV3();

    expect(resolver.resolve('openai/gpt-4o-mini')).toBe(resolver.resolve('openai/gpt-4o-mini'));
    expect(resolver.resolve(own)).toBe(own);
  });
});
