// The TypeScript SDK v1 client checks out a basket, answering the confirmation as told.
// Usage: node ts_checkout.cjs stdio <python> <answer>   (spawns python -m example_basket)
//        node ts_checkout.cjs http <url> <token> <answer>
// <answer>: accept | decline | none (declare no elicitation capability).
// Prints one JSON object: what the user was asked, the checkout result, the basket after.
"use strict";
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const {
  StreamableHTTPClientTransport,
} = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

async function main() {
  const [kind, target, ...rest] = process.argv.slice(2);
  const answer = rest[rest.length - 1];
  let transport;
  if (kind === "stdio") {
    transport = new StdioClientTransport({
      command: target,
      args: ["-m", "example_basket"],
      env: process.env,
      stderr: "inherit",
    });
  } else {
    const headers = { authorization: `Bearer ${rest[0]}` };
    transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  }
  const capabilities = answer === "none" ? {} : { elicitation: {} };
  const client = new Client({ name: "ts-sdk-v1-checkout", version: "1.0.0" }, { capabilities });
  const asked = [];
  if (answer !== "none") {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return answer === "accept"
        ? { action: "accept", content: { confirm: true } }
        : { action: "decline" };
    });
  }
  await client.connect(transport);
  const call = (name, args) => client.callTool({ name, arguments: args });
  const created = await call("create_basket", {});
  const basketId = created.structuredContent.basket_id;
  await call("add_item", { basket_id: basketId, sku: "MUG-24", quantity: 2 });
  const checkout = await call("checkout", { basket_id: basketId });
  const after = await call("get_basket", { basket_id: basketId });
  const version = client.getServerVersion();
  console.log(JSON.stringify({ basketId, asked, checkout, after, version }));
  await client.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
