/** A logger that writes one line per event to standard error; standard output is reserved for MCP frames. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Builds the stderr logger with a fixed prefix such as `factlane`. */
export function createStderrLogger(prefix: string, stream: NodeJS.WritableStream = process.stderr): Logger {
  const write = (level: string, message: string) => stream.write(`${prefix}: ${level}: ${message}\n`);
  return Object.freeze({
    info: (message: string) => write('info', message),
    warn: (message: string) => write('warn', message),
    error: (message: string) => write('error', message),
  });
}

/** A logger that drops everything, for library callers and tests that do not read logs. */
export const SILENT_LOGGER: Logger = Object.freeze({ info() {}, warn() {}, error() {} });
