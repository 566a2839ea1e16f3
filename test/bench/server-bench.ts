import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectBenchClient, ECHO_SERVER, factlaneArgs } from './bench-server.js';
import { roundTo, summarizeLatencies } from './latency-stats.js';

const ROUND_TRIPS = 1000;
const COLD_STARTS = 10;

/** Sequential tools/call round trips; returns per-call milliseconds. */
async function roundTrips(client: Client, name: string, request: Record<string, unknown>, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    const result = await client.callTool({ name, arguments: { request } });
    samples.push(performance.now() - started);
    if (result.isError) throw new Error(`${name} failed during the bench`);
  }
  return samples;
}

/**
 * The server suite: memory_status over stdio against a bare SDK echo tool (1000 sequential calls each,
 * after 100 warm-up calls), and cold start to the initialize response of the built `factlane` binary
 * (new database on the first start, existing one after).
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
    const factlane = (await connectBenchClient('factlane-bench', launch)).client;
    const echo = (await connectBenchClient('factlane-bench', [ECHO_SERVER])).client;
    const statusRequest = { scope: 'GLOBAL_USER' };
    await roundTrips(factlane, 'memory_status', statusRequest, 100);
    await roundTrips(echo, 'echo', statusRequest, 100);
    process.stderr.write('server bench: measuring round trips\n');
    // Interleave blocks so machine noise hits both sides alike.
    // A second baseline echoes a memory_status envelope, so its response is as large as FactLane's:
    // it separates FactLane's own work from the cost of moving a bigger result over stdio.
    const envelope = (await factlane.callTool({ name: 'memory_status', arguments: { request: statusRequest } })).structuredContent as Record<string, unknown>;
    const statusSamples: number[] = [];
    const echoSamples: number[] = [];
    const sizedEchoSamples: number[] = [];
    for (let block = 0; block < 10; block += 1) {
      statusSamples.push(...(await roundTrips(factlane, 'memory_status', statusRequest, ROUND_TRIPS / 10)));
      echoSamples.push(...(await roundTrips(echo, 'echo', statusRequest, ROUND_TRIPS / 10)));
      sizedEchoSamples.push(...(await roundTrips(echo, 'echo', envelope, ROUND_TRIPS / 10)));
    }
    await factlane.close();
    await echo.close();
    const status = summarizeLatencies(statusSamples, 'ms');
    const baseline = summarizeLatencies(echoSamples, 'ms');
    const cold = summarizeLatencies(coldStarts, 'ms');
    const ratio = roundTo(status.p50_ms! / baseline.p50_ms!, 2);
    return {
      memory_status_round_trip: status,
      sdk_echo_round_trip: baseline,
      sdk_echo_status_sized_round_trip: summarizeLatencies(sizedEchoSamples, 'ms'),
      status_envelope_bytes: Buffer.byteLength(JSON.stringify(envelope)),
      p50_ratio_to_echo: ratio,
      p50_target_ratio: 2,
      p50_target_met: ratio <= 2,
      cold_start_to_initialize: { ...cold, first_start_creates_database_ms: roundTo(coldStarts[0]!, 1) },
      cold_start_target_ms: 400,
      cold_start_target_met: cold.p50_ms! < 400,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
