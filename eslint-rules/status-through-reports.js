// hostflow/status-through-reports: in workflow code, a resource's status is written only by its
// family's report class, so what a status says (its words, its Conditions and their transition
// times, which write is waited out) stays in one place per family.
//
// The criterion, checked by name alone:
// - A status-writing activity is one named /^write\w*Status$/. Every activity that writes a
//   status subresource is named so (writeMachineStatus, writeInfrastructureStatus,
//   writeProvisioningStatus, writeBpaStatus, writePoolStatus, writeClusterOperationStatus; they
//   all go through activities/kubernetes/object-status.ts), and so is the kit's adapter method
//   StatusTarget.writeStatus.
// - Refused: such a name as a member (`api.writeMachineStatus` or `api['writeMachineStatus']`,
//   called or passed on), called bare (`writeMachineStatus(…)`), or taken out by destructuring
//   (`const { writeMachineStatus } = api`).
// - Allowed only in the report modules: a file named `report.ts` or `<something>-report.ts`, and
//   the kit's `workflows/kit/resource-status.ts`.
// eslint.config.js applies it to the workflow layer (workflows/ and locks/ files placed there).
import { basename, sep } from 'node:path';

const STATUS_WRITE = /^write\w*Status$/;
const REPORT_FILE = /^(?:[\w.-]+-)?report\.ts$/;
const KIT_FILE = ['workflows', 'kit', 'resource-status.ts'].join(sep);

const isReportModule = (file) => REPORT_FILE.test(basename(file)) || file.endsWith(KIT_FILE);

export default {
  meta: {
    type: 'problem',
    docs: { description: "Write a resource's status from workflows only through a report class." },
    schema: [],
    messages: {
      outsideReport:
        '{{name}} writes a status: call it from the family\'s report class (a "report.ts" or ' +
        '"*-report.ts" file, or the kit\'s resource-status.ts), not here.',
    },
  },
  create(context) {
    if (isReportModule(context.filename)) return {};
    /** A name as written (`a.name`, `name(…)`) or quoted (`a['name']`). */
    const nameOf = (node, computed) =>
      node.type === 'Identifier' && !computed
        ? node.name
        : node.type === 'Literal' && typeof node.value === 'string'
          ? node.value
          : undefined;
    const check = (node, computed = false) => {
      const name = nameOf(node, computed);
      if (name && STATUS_WRITE.test(name))
        context.report({ node, messageId: 'outsideReport', data: { name } });
    };
    return {
      MemberExpression: (node) => check(node.property, node.computed),
      CallExpression: (node) => check(node.callee),
      'ObjectPattern > Property': (node) => check(node.key, node.computed),
    };
  },
};
