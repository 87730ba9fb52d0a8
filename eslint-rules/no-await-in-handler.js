// hostflow/no-await-in-handler: a signal or update handler in workflows/ that awaits anything but
// `condition(...)`. Two coroutines awaiting local activities at once resolve them in the order
// they finished the first time and in the order they were scheduled on replay, so a workflow
// whose handler and main loop both wait on activities stops replaying after a worker restart
// (docs/architecture.md, "Local activities: one coroutine at a time"). Handlers record; the main
// loop acts. Read from the syntax alone: an `await`, or a call returned from an async handler.
const HANDLER_SETTERS = new Set([
  'setHandler',
  'setDefaultSignalHandler',
  'setDefaultUpdateHandler',
]);
const FUNCTIONS = new Set(['ArrowFunctionExpression', 'FunctionExpression']);

/** The handler function `node` is in (the second argument of a setHandler call), if any. */
function handlerOf(ancestors) {
  for (let i = ancestors.length - 1; i > 0; i--) {
    const fn = ancestors[i];
    const call = ancestors[i - 1];
    if (
      FUNCTIONS.has(fn.type) &&
      call.type === 'CallExpression' &&
      call.callee.type === 'Identifier' &&
      HANDLER_SETTERS.has(call.callee.name) &&
      call.arguments.indexOf(fn) >= (call.callee.name === 'setHandler' ? 1 : 0)
    ) {
      return fn;
    }
  }
  return undefined;
}

/** `condition(...)`: waiting for state the handler or the loop sets, which is what a handler may do. */
const isCondition = (node) =>
  node?.type === 'CallExpression' &&
  node.callee.type === 'Identifier' &&
  node.callee.name === 'condition';

const MESSAGE =
  'a handler only records: the main loop does the awaiting (activities, child workflows, timers). ' +
  'Two coroutines awaiting local activities replay in another order (docs/architecture.md, ' +
  '"Local activities: one coroutine at a time"); await condition(...) for what the loop does';

export default {
  meta: {
    type: 'problem',
    docs: { description: 'signal and update handlers in workflows/ await nothing but condition()' },
    schema: [],
  },
  create(context) {
    const ancestorsOf = (node) => context.sourceCode.getAncestors(node);
    return {
      AwaitExpression(node) {
        if (!isCondition(node.argument) && handlerOf(ancestorsOf(node))) {
          context.report({ node, message: MESSAGE });
        }
      },
      // `return operations.sayRefused(...)` from an async handler awaits it all the same.
      ReturnStatement(node) {
        const ancestors = ancestorsOf(node);
        const handler = handlerOf(ancestors);
        const own = ancestors.findLast(
          (a) => FUNCTIONS.has(a.type) || a.type === 'FunctionDeclaration',
        );
        if (
          handler &&
          own === handler &&
          handler.async &&
          node.argument?.type === 'CallExpression' &&
          !isCondition(node.argument)
        ) {
          context.report({ node, message: MESSAGE });
        }
      },
      // `async (seen) => tell(seen)`.
      ArrowFunctionExpression(node) {
        if (
          node.async &&
          node.expression &&
          node.body.type === 'CallExpression' &&
          !isCondition(node.body) &&
          handlerOf([...ancestorsOf(node), node]) === node
        ) {
          context.report({ node: node.body, message: MESSAGE });
        }
      },
    };
  },
};
