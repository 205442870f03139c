// End-to-end test of `mnemo mcp` with the official MCP TypeScript SDK client.
//
//   node e2e.mjs [path/to/mnemo]     (default: ../../bin/mnemo, or $MNEMO_BIN)
//
// Spawns `mnemo mcp --data <tmpdir> --agent e2e` over stdio, lists the tools,
// and runs save → search → timeline → compact (identify, then execute with a
// summary), asserting on every answer. Prints "N passed, 0 failed" and exits 0
// on success; exits 1 on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const bin = resolve(process.argv[2] ?? process.env.MNEMO_BIN ?? join(here, "../../bin/mnemo"));
if (!existsSync(bin)) {
  console.error(`mnemo binary not found at ${bin}; build it with: go build -o bin/mnemo ./cmd/mnemo`);
  process.exit(1);
}

let passed = 0;
function check(name, cond, detail) {
  if (!cond) {
    throw new Error(`FAIL ${name}${detail === undefined ? "" : ": " + (typeof detail === "string" ? detail : JSON.stringify(detail))}`);
  }
  passed++;
  console.log(`ok   ${name}`);
}
const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

const dir = mkdtempSync(join(tmpdir(), "mnemo-e2e-"));
const stderrChunks = [];
const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp", "--data", dir, "--agent", "e2e"],
  stderr: "pipe",
});
transport.stderr?.on("data", (d) => stderrChunks.push(d));
const client = new Client({ name: "mnemo-e2e-ts", version: "1.0.0" });

async function call(name, args, wantError = false) {
  const res = await client.callTool({ name, arguments: args });
  check(`${name} ${wantError ? "fails" : "succeeds"}`, Boolean(res.isError) === wantError, text(res));
  return res;
}

async function main() {
  await client.connect(transport);
  check("server is mnemo", client.getServerVersion()?.name === "mnemo", client.getServerVersion());
  const instructions = client.getInstructions() ?? "";
  check("instructions explain the workflow", ["mem_save", "mem_search", "namespace", "compact_ids"].every((w) => instructions.includes(w)));

  // Tools and their schemas.
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const expected = [
    "mem_save", "mem_update", "mem_delete", "mem_search", "mem_context", "mem_timeline",
    "mem_get_observation", "mem_suggest_topic_key", "mem_save_prompt", "mem_session_start",
    "mem_session_end", "mem_session_summary", "mem_stats", "mem_compact", "mem_progress",
  ];
  // engram's tools plus mem_compact and mem_progress must all be there;
  // later issues add more (sharing, surgery, capsules), so no exact count.
  check("the engram-compatible tools are listed", expected.every((n) => byName[n]), tools.map((t) => t.name));
  check("mem_save requires content", JSON.stringify(byName.mem_save.inputSchema.required) === '["content"]', byName.mem_save.inputSchema.required);
  check("mem_search requires query", byName.mem_search.inputSchema.required?.includes("query"));
  check("mem_timeline takes observation_id", byName.mem_timeline.inputSchema.required?.includes("observation_id"));
  check("every tool has an output schema", tools.every((t) => t.outputSchema?.type === "object"));

  // Save: two memories, the first a decision.
  let res = await call("mem_save", {
    title: "Picked wombat ids", type: "decision", project: "e2e", tags: ["ids"],
    content: "Wombat ids are ULIDs: they sort by creation time.",
  });
  const first = res.structuredContent;
  check("save returns a string id", typeof first.id === "string" && first.id.length > 0, first);
  check("save text names id, type and namespace", text(res).includes(first.id) && text(res).includes("(decision)") && text(res).includes("agent://e2e"), text(res));
  res = await call("mem_save", { title: "Wombat id parsing", project: "e2e", content: "Parse wombat ids with the ulid package." });
  const second = res.structuredContent;
  check("second save has another id", second.id !== first.id);

  // Search.
  res = await call("mem_search", { query: "wombat", project: "e2e" });
  const hits = res.structuredContent.results;
  check("search finds both", hits.length === 2 && res.structuredContent.total === 2, text(res));
  check("search text is a numbered list with ids and scores", /^1\. \[/m.test(text(res)) && text(res).includes("score") && text(res).includes(first.id), text(res));

  // Timeline around the second memory.
  res = await call("mem_timeline", { observation_id: second.id, before: 5, after: 5 });
  check("timeline centers on the memory", res.structuredContent.center.id === second.id, res.structuredContent);
  // Both saves may share a millisecond, so the first may sit on either side.
  const around = [...(res.structuredContent.before ?? []), ...(res.structuredContent.after ?? [])];
  check("timeline shows the neighbouring memory", around.some((m) => m.id === first.id), text(res));

  // Compact, identify phase: nothing is old yet, and older_than_days must be > 0.
  res = await call("mem_compact", { older_than_days: 0 }, true);
  check("older_than_days 0 is explained", text(res).includes("older_than_days must be > 0"), text(res));
  res = await call("mem_compact", { older_than_days: 7, project: "e2e" });
  check("identify mode lists no fresh memories", res.structuredContent.mode === "identify" && !(res.structuredContent.candidates?.length), text(res));

  // Compact, execute phase: retire both (ids as engram's JSON string) into a summary.
  res = await call("mem_compact", {
    compact_ids: JSON.stringify([first.id, second.id]), project: "e2e",
    summary_title: "Wombat ids", summary_content: "Wombat ids are ULIDs, parsed with the ulid package.",
  });
  const cr = res.structuredContent;
  check("execute compacts both", cr.mode === "execute" && cr.compacted === 2 && typeof cr.summary_id === "string", cr);
  check("live count drops from 2 to 1", cr.before === 2 && cr.after === 1, cr);
  res = await call("mem_get_observation", { id: cr.summary_id });
  check("summary is a compaction_summary", res.structuredContent.type === "compaction_summary", res.structuredContent);
  res = await call("mem_search", { query: "wombat", project: "e2e" });
  check("search now finds only the summary", res.structuredContent.results.length === 1 && res.structuredContent.results[0].memory.id === cr.summary_id, text(res));
  res = await call("mem_compact", { compact_ids: [first.id] }, true);
  check("compacting a deleted memory is refused", text(res).length > 0, text(res));

  // Unknown id.
  res = await call("mem_get_observation", { id: "01NOSUCHID" }, true);
  check("unknown id says not found", text(res).includes("not found"), text(res));
}

let failed = 0;
try {
  await main();
} catch (err) {
  failed = 1;
  console.error(err.message ?? err);
  const stderr = Buffer.concat(stderrChunks).toString();
  if (stderr) console.error("--- mnemo mcp stderr ---\n" + stderr);
} finally {
  await client.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
