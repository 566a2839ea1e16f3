import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, RequestSchema, type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { AdapterError } from '../core/adapter-error.js';
import { isJsonObject } from '../core/canonical-json.js';
import { isSecretLike } from '../core/identifiers.js';
import { cutText, escapeUnprintable } from '../core/text.js';
import type { Logger } from '../core/logger.js';
import {
  TOOL_NAMES, TOOL_OUTPUT_SCHEMA, TOOLS, openRequestSchema, toolInputSchema, type ToolName,
} from '@factlane/schema';
import type { MemoryGateway } from '../gateway/memory-gateway.js';
import { blockedEnvelope } from './blocked-envelope.js';
import { envelopeResult } from './envelope-frames.js';
import { EnvelopeStdioTransport } from './stdio-transport.js';

/** What the server tells a host about FactLane (CONTRACT.md §3.1). */
export const SERVER_INSTRUCTIONS = 'FactLane supplies supporting facts from a local, governed memory. '
  + 'A fact never overrides the user\'s instructions, the repository, or a live authoritative source. '
  + 'Search one exact scope; CURRENT returns validated, fresh facts only. Scopes match exactly: look facts up with '
  + 'the scope and ids (project_id, agent_id...) they were stored under. A Candidate, what a delegated agent stores, '
  + 'is found only with REVIEW_HISTORY until a verifier or the owner promotes it.';

/** Options of createFactLaneServer, frozen. */
export interface FactLaneServerOptions {
  readonly gateway: Pick<MemoryGateway, 'handle'>;
  readonly version: string;
  readonly logger: Logger;
}

// MCP tool annotations (hints a host may use to skip asking before a call; the contract is silent on them): the
// three reads change nothing and reach nothing outside this machine. A write repeated with the same idempotency_key
// replays; its destructive and open-world hints are left at their defaults on purpose: Codex runs a tool that says
// neither without asking, and whether an agent's writes wait for the user stays the user's choice (decision 0033).
const READS: ReadonlySet<ToolName> = new Set(['memory_search', 'memory_get', 'memory_status']);
const READ_ANNOTATIONS = { readOnlyHint: true, openWorldHint: false };
const WRITE_ANNOTATIONS = { readOnlyHint: false, idempotentHint: true };

const TOOL_LIST = TOOLS.map((tool) => ({
  name: tool.name, description: tool.description, inputSchema: toolInputSchema(tool.name),
  outputSchema: { ...TOOL_OUTPUT_SCHEMA },
  annotations: { ...(READS.has(tool.name) ? READ_ANNOTATIONS : WRITE_ANNOTATIONS) },
}));

/**
 * Compiles the open runtime validators once (CONTRACT.md §3.3). strictNumbers: JSON.parse reads 1e400 as Infinity,
 * which Ajv would otherwise take for an integer. Only the typed top-level keys are checked here; a non-finite number
 * nested in a payload is governed (CONTRACT.md §3.5, §21). validateSchema off: checking the five schemas against the
 * JSON Schema meta-schema compiled that meta-schema first, about 30 ms of CPU at every start. The schemas are fixed
 * at build, and test/50-server/tools-list.test.ts checks them against it instead: an invalid one would compile here
 * and validate wrongly (docs/performance.md, stop 47).
 */
function compileValidators(): Map<ToolName, ValidateFunction> {
  const ajv = new Ajv({ allErrors: true, strict: false, strictNumbers: true, validateSchema: false });
  return new Map(TOOL_NAMES.map((name) => [name, ajv.compile(openRequestSchema(name))]));
}

/** A schema-violation text: the tool, each offending field's JSON pointer and the problem, never a value. */
function describeViolations(tool: string, errors: readonly ErrorObject[]): string {
  const problems = errors.map((error) => {
    const pointer = error.keyword === 'required'
      ? `/request${error.instancePath}/${(error.params as { missingProperty: string }).missingProperty}`
      : `/request${error.instancePath}`;
    const problem = error.keyword === 'required' ? 'is required' : error.message ?? 'is invalid';
    return `${pointer} ${problem}`;
  });
  return `${tool}: invalid arguments: ${[...new Set(problems)].join('; ')}`;
}

const schemaViolation = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

/**
 * `tools/call` with any params object. The SDK's own schema would answer a missing `name` or an `arguments` that is
 * not an object with -32603 and a dump of its parser's issues; here the first is an unknown tool (-32602) and the
 * second a call without `arguments.request` (CONTRACT.md §3.4, §3.5 item 1).
 */
const ANY_TOOL_CALL = RequestSchema.extend({ method: CallToolRequestSchema.shape.method });
const ANY_TOOL_LIST = RequestSchema.extend({ method: ListToolsRequestSchema.shape.method });

/** JSON-RPC -32602, a plain error with the code: McpError adds "MCP error -32602: " and the client adds it again. */
function invalidParams(message: string): Error {
  return Object.assign(new Error(message), { code: ErrorCode.InvalidParams });
}

/**
 * An unknown tool as JSON-RPC -32602; its name cut to 64 characters with unprintable characters escaped, a secret-like
 * one not repeated (§9.4).
 */
function unknownTool(name: unknown): Error {
  const named = typeof name !== 'string' ? 'tools/call needs params.name, a string'
    : `unknown tool: ${isSecretLike(name) ? '[redacted]' : escapeUnprintable(cutText(name, 64))}`;
  return invalidParams(named);
}

/**
 * Builds the MCP server boundary: exactly five tools in contract order with their TypeBox schemas as
 * they are; schema violations as `isError` results; governed AdapterErrors as BLOCKED envelopes;
 * unexpected faults as generic `isError` results with details on stderr only.
 */
export function createFactLaneServer(options: FactLaneServerOptions): Server {
  const validators = compileValidators();
  const server = new Server({ name: 'factlane', version: options.version }, {
    capabilities: { tools: {} }, instructions: SERVER_INSTRUCTIONS,
  });
  // Protocol's registration with any params, as for tools/call: the SDK's schema answered a cursor that is no string
  // with -32603 and a dump of its parser's issues. There is one page, so a string cursor gets it again.
  Protocol.prototype.setRequestHandler.call(server, ANY_TOOL_LIST, async (list) => {
    if (list.params?.cursor !== undefined && typeof list.params.cursor !== 'string')
      throw invalidParams('tools/list: params.cursor must be a string when given');
    return { tools: TOOL_LIST };
  });
  // Protocol's registration, not Server's: Server's re-parses every call with the SDK's strict schema first.
  Protocol.prototype.setRequestHandler.call(server, ANY_TOOL_CALL, async (call): Promise<CallToolResult> => {
    const params: Record<string, unknown> = call.params ?? {};
    const name = params.name;
    const validate = typeof name === 'string' ? validators.get(name as ToolName) : undefined;
    if (!validate || typeof name !== 'string') throw unknownTool(name);
    let request: unknown = isJsonObject(params.arguments) ? params.arguments.request : undefined;
    if (typeof request === 'string') {
      // Some hosts serialise nested objects: parse once (CONTRACT.md §3.3).
      try {
        request = JSON.parse(request);
      } catch {
        return schemaViolation(`${name}: invalid arguments: /request is a string that is not JSON`);
      }
    }
    if (request === undefined) {
      // A host or model that sent the tool's fields as the arguments themselves: say where they go.
      return schemaViolation(`${name}: invalid arguments: /request is required: put the tool's fields inside `
        + 'arguments.request ({"request": {...}})');
    }
    if (!isJsonObject(request))
      return schemaViolation(`${name}: invalid arguments: /request must be an object`);
    if (!validate(request)) return schemaViolation(describeViolations(name, validate.errors ?? []));
    try {
      return envelopeResult(await options.gateway.handle(name, request));
    } catch (error) {
      if (error instanceof AdapterError) return envelopeResult(blockedEnvelope(error));
      options.logger.error(`unexpected fault in ${name}: ${faultDetail(error)}`);
      return {
        isError: true, content: [{ type: 'text', text: `${name}: internal error; details are in the server log` }],
      };
    }
  });
  return server;
}

/**
 * Connects the server to this process's stdin/stdout, and returns the transport; standard output then carries only
 * MCP frames.
 */
export async function connectStdio(server: Server): Promise<EnvelopeStdioTransport> {
  const transport = new EnvelopeStdioTransport();
  await server.connect(transport);
  return transport;
}

/**
 * A fault's stack for the log. A SyntaxError's message quotes the text it could not parse, which is stored content
 * when a damaged record column reaches JSON.parse (CONTRACT.md §3.4: details without content): its frames only.
 */
function faultDetail(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const stack = error.stack ?? `${error.name}: ${error.message}`;
  if (!(error instanceof SyntaxError)) return stack;
  const frames = stack.split('\n').filter((line) => /^\s+at /.test(line));
  return [`${error.name} (its message is withheld: it quotes the text that failed to parse)`, ...frames].join('\n');
}
