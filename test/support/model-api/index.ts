// Loopback model-API fakes the real vendor CLIs (and the vendors' SDKs) talk to, all playing one scripted model
// (./script.ts says how a request finds its place in a script). One file per vendor:
//   startAnthropicModel  Messages API (Claude Code; `ANTHROPIC_BASE_URL` = baseUrl)
//   startOpenAIModel     Responses and Chat Completions (Codex, OpenCode; `OPENAI_BASE_URL` = baseUrl, ends in /v1)
//   startGeminiModel     generateContent / streamGenerateContent (Gemini CLI; `GOOGLE_GEMINI_BASE_URL` = baseUrl)
// Each is proven against the vendor's official SDK by the *.test.ts beside it.
import { startAnthropicModel } from './anthropic.ts';
import { startGeminiModel } from './gemini.ts';
import { startOpenAIModel } from './openai.ts';
import type { ModelApiFake, ModelApiOptions } from './script.ts';

export { type AnthropicFakeOptions, startAnthropicModel } from './anthropic.ts';
export { type GeminiFakeOptions, startGeminiModel } from './gemini.ts';
export { startOpenAIModel } from './openai.ts';
export type {
  AnswerTurn,
  Conversation,
  ErrorTurn,
  ModelApiFake,
  ModelApiOptions,
  ModelRequest,
  ScriptToolCall,
  ScriptUsage,
  Turn,
} from './script.ts';

/** The fake of a vendor's model API, by the vendor's name. */
export function startVendorModel(
  vendor: 'anthropic' | 'openai' | 'gemini',
  options: ModelApiOptions,
): Promise<ModelApiFake> {
  const start = { anthropic: startAnthropicModel, openai: startOpenAIModel, gemini: startGeminiModel }[
    vendor
  ];
  return start(options);
}
