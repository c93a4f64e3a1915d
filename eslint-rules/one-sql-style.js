// @ts-check
'use strict';

/**
 * One SQL style in repositories (`**\/*.repository.ts`): every statement is SQL text, written with the
 * typed builder of src/database/table.ts (`select`, `queryRows`, `insertEntity`, `assignmentsOf`, the column
 * lists) and `change.write` pieces, and every public method of a repository shows its SQL in a snapshot.
 *
 * - `vault/generate-sql-on-every-repository-method`: a public method of a repository class without
 *   `@GenerateSql(...)` (its SQL would be in no snapshot under test/sql/);
 * - `RESTRICTED_SYNTAX` and `RESTRICTED_IMPORTS`, for ESLint's own `no-restricted-syntax` and
 *   `no-restricted-imports`: TypeORM's repository API (`getRepository`, an entity manager, `save`, ...),
 *   its QueryBuilder and its find operators (`In`, `IsNull`, ...), which would write a statement a second way.
 */

const STYLE =
  'write the statement as SQL text with the builder of src/database/table.ts (select, queryRows, insertEntity, assignmentsOf), not TypeORM';

/** `no-restricted-syntax` entries for repositories. */
const RESTRICTED_SYNTAX = [
  {
    selector:
      'CallExpression[callee.property.name=/^(getRepository|getTreeRepository|withRepository|getCustomRepository|createQueryBuilder)$/]',
    message: `TypeORM's repository API or QueryBuilder in a repository: ${STYLE}.`,
  },
  {
    selector: "MemberExpression[property.name='manager']",
    message: `An entity manager in a repository (its methods are TypeORM's repository API; a change or the pool runs SQL): ${STYLE}.`,
  },
];

/** `no-restricted-imports` paths for repositories: of TypeORM, the connection and its types only. */
const RESTRICTED_IMPORTS = [
  {
    name: 'typeorm',
    allowImportNames: ['DataSource', 'QueryRunner'],
    message: `A repository takes the connection from TypeORM, nothing else: ${STYLE}.`,
  },
  { name: '@nestjs/typeorm', message: `No injected TypeORM repositories: ${STYLE}.` },
];

/** Whether a decorator is `@GenerateSql(...)`. */
const isGenerateSql = (/** @type {any} */ decorator) => {
  const call = decorator.expression;
  return (
    call.type === 'CallExpression' && call.callee.type === 'Identifier' && call.callee.name === 'GenerateSql'
  );
};

/** @type {import('eslint').Rule.RuleModule} */
const generateSqlRule = {
  meta: {
    type: 'problem',
    docs: { description: 'every public method of a repository has an SQL snapshot (@GenerateSql)' },
    schema: [],
    messages: {
      missing:
        'Repository method `{{name}}` has no @GenerateSql: give it example arguments, so that its SQL is in test/sql/ (npm run sql).',
    },
  },
  create(context) {
    return {
      /** @param {any} node */
      MethodDefinition(node) {
        if (node.kind !== 'method' || node.static || node.key.type === 'PrivateIdentifier') return;
        if (node.accessibility === 'private' || node.accessibility === 'protected') return;
        if (
          node.parent?.parent?.type !== 'ClassDeclaration' &&
          node.parent?.parent?.type !== 'ClassExpression'
        )
          return;
        if ((node.decorators ?? []).some(isGenerateSql)) return;
        const name = node.key.type === 'Identifier' ? node.key.name : context.sourceCode.getText(node.key);
        context.report({ node: node.key, messageId: 'missing', data: { name } });
      },
    };
  },
};

module.exports = { generateSqlRule, RESTRICTED_SYNTAX, RESTRICTED_IMPORTS };
