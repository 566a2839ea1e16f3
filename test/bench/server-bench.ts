import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectBenchClient, ECHO_SERVER, ENVELOPE_SERVER, factlaneArgs } from './bench-server.js';
import { roundTo, summarizeLatencies } from './latency-stats.js';

const ROUND_TRIPS = 1000;
const COLD_STARTS = 10;
const SETTLING_CALLS = 6000;

/** Sequential tools/call round trips; returns per-call milliseconds. */
async function roundTrips(client: Client, name: string, request: Record<string, unknown>,
  count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    const result = await client.callTool({ name, arguments: { request } });
    samples.push(performance.now() - started);
    if (result.isError) throw new Error(`${name} failed during the bench`);
  }
  return samples;
}

/** p50s of one measuring window (interleaved blocks, so machine noise hits every server alike). */
async function measureWindow(clients: { factlane: Client; echo: Client; floor: Client },
  request: Record<string, unknown>, callsEach: number) {
  const status: number[] = [];
  const echo: number[] = [];
  const floor: number[] = [];
  for (let block = 0; block < callsEach / 100; block += 1) {
    status.push(...(await roundTrips(clients.factlane, 'memory_status', request, 100)));
    echo.push(...(await roundTrips(clients.echo, 'echo', request, 100)));
    floor.push(...(await roundTrips(clients.floor, 'envelope', request, 100)));
  }
  return { status: summarizeLatencies(status, 'ms'), echo: summarizeLatencies(echo, 'ms'),
    floor: summarizeLatencies(floor, 'ms') };
}

const ratio = (a: Record<string, number>, b: Record<string, number>) => roundTo(a.p50_ms! / b.p50_ms!, 2);

/**
 * The server suite: memory_status over stdio against a bare SDK echo tool, and cold start to the initialize
 * response of the built `factlane` binary (new database on the first start, existing one after).
 *
 * A third server, the envelope floor, is a bare SDK server answering with a fixed memory_status envelope: what
 * moving the envelope the contract requires costs with no work at all. The target window is the issue's:
 * 1000 calls each after 100 warm-up calls. A second window measures again after 6000 more calls each, once the
 * JIT has settled: the bare echo gets much faster with warm-up than the servers that move an envelope.
 */
export async function runServerBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'factlane-server-bench-'));
  try {
    const dbPath = join(dir, 'bench.sqlite3');
    const launch = factlaneArgs('--db', dbPath, '--host-id', 'bench');
    const coldStarts: number[] = [];
    for (let i = 0; i < COLD_STARTS; i += 1) {
      const { client, startupMs } = await connectBenchClient('factlane-bench', launch);
      coldStarts.push(startupMs);
      await client.close();
    }
    const statusRequest = { scope: 'GLOBAL_USER' };
    const factlane = (await connectBenchClient('factlane-bench', launch)).client;
    const first = await factlane.callTool({ name: 'memory_status', arguments: { request: statusRequest } });
    const envelopeText = (first.content as { text: string }[])[0]!.text;
    const echo = (await connectBenchClient('factlane-bench', [ECHO_SERVER])).client;
    const floor = (await connectBenchClient('factlane-bench', [ENVELOPE_SERVER],
      { FACTLANE_BENCH_ENVELOPE: envelopeText })).client;
    const clients = { factlane, echo, floor };
    await roundTrips(factlane, 'memory_status', statusRequest, 100);
    await roundTrips(echo, 'echo', statusRequest, 100);
    await roundTrips(floor, 'envelope', statusRequest, 100);
    process.stderr.write('server bench: measuring round trips\n');
    const target = await measureWindow(clients, statusRequest, ROUND_TRIPS);
    process.stderr.write('server bench: warming up for the steady-state window\n');
    await measureWindow(clients, statusRequest, SETTLING_CALLS);
    const settled = await measureWindow(clients, statusRequest, ROUND_TRIPS);
    await factlane.close();
    await echo.close();
    await floor.close();
    const cold = summarizeLatencies(coldStarts, 'ms');
    const targetRatio = ratio(target.status, target.echo);
    return {
      memory_status_round_trip: target.status,
      sdk_echo_round_trip: target.echo,
      sdk_envelope_floor_round_trip: target.floor,
      status_envelope_bytes: Buffer.byteLength(envelopeText),
      p50_ratio_to_echo: targetRatio,
      p50_target_ratio: 2,
      p50_target_met: targetRatio <= 2,
      floor_p50_ratio_to_echo: ratio(target.floor, target.echo),
      p50_ratio_to_floor: ratio(target.status, target.floor),
      steady_state_after_calls: 100 + ROUND_TRIPS + SETTLING_CALLS,
      steady_state: {
        memory_status_p50_ms: settled.status.p50_ms,
        sdk_echo_p50_ms: settled.echo.p50_ms,
        sdk_envelope_floor_p50_ms: settled.floor.p50_ms,
        p50_ratio_to_echo: ratio(settled.status, settled.echo),
        floor_p50_ratio_to_echo: ratio(settled.floor, settled.echo),
        p50_ratio_to_floor: ratio(settled.status, settled.floor),
      },
      cold_start_to_initialize: { ...cold, first_start_creates_database_ms: roundTo(coldStarts[0]!, 1) },
      cold_start_target_ms: 400,
      cold_start_target_met: cold.p50_ms! < 400,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
