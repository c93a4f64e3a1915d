// @ts-check
'use strict';

/**
 * `vault/no-sql-outside-repositories`: SQL lives in `*.repository.ts` files. The rule reads what the code
 * says, not what a file is called: it reports
 *
 * - every string or template literal that reads as a SQL statement (`SELECT ... FROM`, a string that
 *   starts with SELECT, `INSERT INTO`, `UPDATE x SET`, `DELETE FROM`, `WITH x AS (`, `ALTER TABLE`,
 *   `CREATE INDEX`, `DROP TABLE`, `TRUNCATE` ...), a template's `${...}` parts read as one word;
 * - every call `x.query(...)` that hands a connection SQL text: with type information (as `npm run lint`
 *   runs), a call whose first argument is a string or a pg query object (`{ text }`); without it (the
 *   rule's own tests), every `.query(` call with an argument.
 *
 * Where it does not apply is the configuration's business (eslint.config.mjs): the repositories
 * themselves, and the files of `ALLOWED` below, each with its reason.
 */

/** Files where SQL is expected besides `**\/*.repository.ts`, each with the reason it is allowed there. */
const ALLOWED = [
  { files: ['src/database/migrations/**'], reason: 'migrations are SQL by nature' },
  { files: ['test/**', 'bench/**'], reason: 'tests and benchmarks read and seed the database directly' },
  {
    files: ['src/**/*.spec.ts'],
    reason: 'unit specs assert the SQL text that the builders of repositories produce',
  },
  {
    files: ['src/database/sql.ts'],
    reason: 'helpers that repositories call to assemble a statement (multi-row INSERT); it sends nothing',
  },
  {
    files: ['src/database/table.ts'],
    reason:
      'the typed builder of repositories: `select` and `queryRows` send the statement a repository wrote and ' +
      'type its rows; it writes no statement of its own',
  },
  {
    files: ['src/common/unit-of-work/**', 'src/common/context/transactional.ts'],
    reason:
      'the plumbing that sends what repositories wrote: WriteBatch joins their pieces into one statement, ' +
      'and the change and the runner hand statements to the connection (they write no SQL of their own)',
  },
];

/**
 * Statement shapes. They are matched in any case, but for a SELECT in lower case, which must begin the
 * text (prose says "select ... from" too).
 */
const STATEMENTS = [
  { what: 'SELECT ... FROM', re: /\bSELECT\s[\s\S]*?\bFROM\b/ },
  { what: 'SELECT', re: /^\s*\(?\s*select\s/i },
  { what: 'INSERT INTO', re: /\binsert\s+into\b/i },
  { what: 'UPDATE ... SET', re: /\bupdate\s+[\w."]+\s+set\b/i },
  { what: 'DELETE FROM', re: /\bdelete\s+from\b/i },
  {
    what: 'WITH ... AS (',
    re: /\bwith\s+(recursive\s+)?\w+(\s*\([\w\s,]*\))?\s+as\s+(not\s+)?(materialized\s+)?\(/i,
  },
  {
    what: 'ALTER',
    re: /\balter\s+(table|index|sequence|type|function|view|materialized\s+view|schema|role|database|system|extension|trigger|policy)\b/i,
  },
  {
    what: 'CREATE',
    re: /\bcreate\s+(or\s+replace\s+)?(unique\s+)?(temp(orary)?\s+)?(table|index|view|materialized\s+view|function|procedure|trigger|type|extension|schema|sequence|database|role|policy)\b/i,
  },
  {
    what: 'DROP',
    re: /\bdrop\s+(table|index|view|materialized\s+view|function|procedure|trigger|type|extension|schema|sequence|database|role|policy)\b/i,
  },
  { what: 'TRUNCATE', re: /^\s*truncate\s/i },
  // A SELECT written in capitals anywhere (`... SELECT ${columns}`), even without FROM.
  { what: 'SELECT', re: /(^|[\s(,])SELECT\s/ },
];

/**
 * The statement `text` reads as, if any.
 * @param {string} text
 * @returns {string | undefined}
 */
function readsAsSql(text) {
  return STATEMENTS.find(({ re }) => re.test(text))?.what;
}

/**
 * The text of a template literal, each `${...}` read as one word.
 * @param {import('estree').TemplateLiteral} node
 */
function templateText(node) {
  return node.quasis.map((q) => q.value.cooked ?? q.value.raw).join(' x ');
}

/**
 * Whether a value of this type is SQL text for `query`: a string, or a pg query object with `text`.
 * @param {import('typescript').Type} type
 * @param {typeof import('typescript')} ts
 * @returns {boolean}
 */
function isSqlArgument(type, ts) {
  if (type.isUnion()) return type.types.some((t) => isSqlArgument(t, ts));
  if (type.flags & (ts.TypeFlags.StringLike | ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return true;
  return !!type.getProperty('text');
}

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'SQL statements and `.query(` calls belong in *.repository.ts files' },
    schema: [],
    messages: {
      statement: 'SQL ({{what}}) outside a repository: move it into a *.repository.ts file.',
      query: 'A `.query(` call outside a repository: move it into a *.repository.ts file.',
    },
  },
  create(context) {
    const services = context.sourceCode.parserServices;
    const program = services?.program;
    /** @type {typeof import('typescript') | undefined} */
    let ts;
    if (program) ts = require('typescript');

    /** @param {import('estree').Node} node @param {string} text */
    const check = (node, text) => {
      const what = readsAsSql(text);
      if (what) context.report({ node, messageId: 'statement', data: { what } });
    };

    return {
      Literal(node) {
        if (typeof node.value === 'string') check(node, node.value);
      },
      TemplateLiteral(node) {
        check(node, templateText(node));
      },
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || callee.computed) return;
        if (callee.property.type !== 'Identifier' || callee.property.name !== 'query') return;
        const [first] = node.arguments;
        if (!first || first.type === 'SpreadElement') return;
        if (program && ts && services.esTreeNodeToTSNodeMap) {
          const checker = program.getTypeChecker();
          const type = checker.getTypeAtLocation(
            services.esTreeNodeToTSNodeMap.get(/** @type {any} */ (first)),
          );
          if (!isSqlArgument(type, ts)) return;
        }
        context.report({ node: callee.property, messageId: 'query' });
      },
    };
  },
};

module.exports = { rule, ALLOWED, readsAsSql };
