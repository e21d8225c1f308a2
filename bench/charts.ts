import { writeFile } from 'node:fs/promises';
import * as Plot from '@observablehq/plot';
import { parseHTML } from 'linkedom';
import type { BenchResults } from './results.js';
import type { Curve } from './workloads/curves.js';

/** One row of a chart's data: an implementation's value at one x. */
interface Row {
  name: string;
  x: number;
  y: number;
}

/** The curves of workload 11 (and the wait distributions) as the SVG files the docs show. */
export async function writeCharts(results: BenchResults, dir: string): Promise<string[]> {
  const { curves } = results;
  const nameOf = (id: string) => shortName(results, id);
  const charts: [file: string, svg: string][] = [
    [
      'curve-instances-throughput.svg',
      lineChart(rowsOf(curves.instances, nameOf, 'opsPerSec'), {
        title: 'One key, N instance processes: sections per second',
        x: 'instances (processes) on one key',
        y: 'sections / s',
      }),
    ],
    [
      'curve-instances-wait-p99.svg',
      lineChart(rowsOf(curves.instances, nameOf, 'waitP99Ms'), {
        title: 'One key, N instance processes: wait p99',
        x: 'instances (processes) on one key',
        y: 'wait p99 (ms, log)',
        logY: true,
      }),
    ],
    [
      'curve-keys-throughput.svg',
      lineChart(rowsOf(curves.keys, nameOf, 'opsPerSec'), {
        title: 'Distinct keys in flight, one process: acquire + release per second',
        x: 'distinct keys in flight',
        y: 'ops / s',
      }),
    ],
    [
      'curve-keys-latency-p99.svg',
      lineChart(rowsOf(curves.keys, nameOf, 'waitP99Ms'), {
        title: 'Distinct keys in flight, one process: acquire latency p99',
        x: 'distinct keys in flight',
        y: 'acquire p99 (ms, log)',
        logY: true,
      }),
    ],
    [
      `waits-${curves.distributionAt}-instances.svg`,
      distributionChart(curves.waitsAt, nameOf, curves.distributionAt),
    ],
  ];
  await Promise.all(charts.map(([file, svg]) => writeFile(`${dir}${file}`, svg)));
  return charts.map(([file]) => file);
}

/** The implementation's name without the version and configuration the tables carry. */
function shortName(results: BenchResults, id: string): string {
  const name = results.implementations.find((i) => i.id === id)?.name ?? id;
  return name
    .replace(/ [\d^~].*$/, '')
    .replace(/,.*$/, '')
    .replace(/ \(.*\)$/, '');
}

function rowsOf(
  curve: Curve,
  nameOf: (id: string) => string,
  field: 'opsPerSec' | 'waitP99Ms',
): Row[] {
  return Object.entries(curve).flatMap(([id, points]) =>
    points.map((point) => ({ name: nameOf(id), x: point.size, y: Math.max(point[field], 0.01) })),
  );
}

/**
 * The little of the DOM this file touches. Plot's and linkedom's types name the browser's DOM
 * types, which this Node project does not load (no "dom" lib): their functions are typed here.
 */
interface Chart {
  setAttribute(name: string, value: string): void;
  readonly outerHTML: string;
}
const render = Plot.plot as unknown as (
  options: Omit<Plot.PlotOptions, 'document'> & { document: unknown },
) => Chart;
const parse = parseHTML as unknown as (html: string) => { document: unknown };

/** The chart's title, inside the SVG (Plot's own `title` wraps the SVG in an HTML figure). */
function titleMark(title: string): Plot.Markish {
  return Plot.text([title], {
    frameAnchor: 'top-left',
    dy: -28,
    dx: -50,
    textAnchor: 'start',
    fontSize: 14,
    fontWeight: 'bold',
  });
}

/**
 * The series' names in their colours, in the right margin (Plot's own legend is HTML, which an
 * SVG file cannot hold).
 */
function legend(rows: readonly Row[]): Plot.Markish[] {
  const names = [...new Set(rows.map((row) => row.name))];
  return names.flatMap((name, i) => {
    const at = { frameAnchor: 'top-right', dy: i * 16, fill: 'name' } as const;
    return [
      Plot.dot([{ name }], { ...at, dx: 14, r: 4 }),
      Plot.text([{ name }], { ...at, dx: 22, text: 'name', textAnchor: 'start' }),
    ];
  });
}

/** A document for Plot to build its SVG in: Node has no DOM of its own. */
function documentOf(): unknown {
  return parse('<!doctype html><html><body></body></html>').document;
}

function svgOf(chart: Chart): string {
  chart.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  return `${chart.outerHTML}\n`;
}

/** One colour per implementation, the same in every chart; this library's first. */
const COLORS = {
  domain: ['nestjs-redis-lock', 'redis-semaphore', 'redlock', 'raw floor'],
  range: ['#1f6feb', '#e8890c', '#2da44e', '#8c8c8c'],
  unknown: '#b04ad0',
};

const FRAME = {
  width: 640,
  height: 360,
  marginTop: 40,
  marginLeft: 60,
  marginRight: 130,
  // Dark themes show an SVG image on their own background: give it a light one of its own.
  style: { background: 'white', color: 'black', fontSize: '11px' },
};

function lineChart(
  rows: Row[],
  labels: { title: string; x: string; y: string; logY?: boolean },
): string {
  const line = { x: 'x', y: 'y', stroke: 'name', z: 'name' } as const;
  return svgOf(
    render({
      ...FRAME,
      document: documentOf(),
      x: { type: 'log', base: 2, label: labels.x, ticks: [...new Set(rows.map((r) => r.x))] },
      y: {
        type: labels.logY ? 'log' : 'linear',
        label: labels.y,
        grid: true,
        nice: true,
        tickFormat: labels.logY ? '~g' : ',~f',
      },
      color: COLORS,
      marks: [
        titleMark(labels.title),
        Plot.line(rows, { ...line, marker: 'circle' }),
        ...legend(rows),
      ],
    }),
  );
}

/** Cumulative distribution of every wait, one line per implementation. */
function distributionChart(
  waitsAt: Record<string, number[]>,
  nameOf: (id: string) => string,
  instances: number,
): string {
  const rows = Object.entries(waitsAt).flatMap(([id, waits]) =>
    waits.map((wait, i) => ({
      name: nameOf(id),
      x: Math.max(wait, 0.01),
      y: ((i + 1) / waits.length) * 100,
    })),
  );
  const line = { x: 'x', y: 'y', stroke: 'name', z: 'name' } as const;
  return svgOf(
    render({
      ...FRAME,
      document: documentOf(),
      x: { type: 'log', label: 'wait (ms, log)', grid: true, tickFormat: '~g' },
      y: { label: 'waits at most this long (%)', grid: true, domain: [0, 100] },
      color: COLORS,
      marks: [
        titleMark(`Wait distribution, ${instances} instance processes on one key`),
        Plot.line(rows, { ...line, curve: 'step-after' }),
        ...legend(rows),
      ],
    }),
  );
}
