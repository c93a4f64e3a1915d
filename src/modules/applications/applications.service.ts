import { ApplicationsErrorCode, ApplicationsException } from './applications.errors';
import { ValidationException } from '../../common/errors/domain.exception';
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AccessRule } from '../../common/auth/access-rule';
import { generateApiKey, hashApiKey, KeyKind } from '../../common/auth/api-key';
import { checkGrants } from '../../common/auth/grants';
import { ApplicationType, PERMISSIONS, PermissionDefinition } from '../../common/auth/permissions';
import type { Principal } from '../../common/auth/principal';
import type { EventType, OutboxEvent } from '../../common/events/event-outbox';
import { CURSOR_UUID, decodeCursor, encodeCursor } from '../../common/pagination/cursor-pagination';
import { offsetOf, offsetPage } from '../../common/pagination/offset-pagination';
import type { Change } from '../../common/unit-of-work/change';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { checkAllowedOrigins } from './allowed-origins';
import { ADMINISTRATION, administers, assertHolds, managementPermissions } from './grant-checks';
import { applicationDto, keyDto } from './application-answer';
import { ApplicationKeyResolver } from './application-key.resolver';
import { ApplicationsRepository, KeySummary } from './applications.repository';
import { ApiKeyDto, ApplicationDto, ApplicationPageDto } from './dto/application.dto';
import { CreateApplicationDto } from './dto/create-application.dto';
import { ListApplicationsQueryDto } from './dto/list-applications-query.dto';
import { UpdateApplicationDto } from './dto/update-application.dto';
import { ApiKeyEntity } from './entities/api-key.entity';
import { ApplicationEntity } from './entities/application.entity';

const KIND_OF_TYPE: Record<ApplicationType, KeyKind> = {
  public: 'public',
  private: 'private',
  management: 'management',
};

export interface NewApplication {
  /** Given when the caller needs it before the change opens (a tenant's creation: its audit actor). */
  id?: string;
  tenantId: string;
  name: string;
  type: ApplicationType;
  permissions: string[];
  rules: AccessRule[];
  allowedOrigins?: string[];
  createdBy: string | null;
  createKey: boolean;
}

/**
 * Applications and their keys, always within the caller's tenant. Each write is one change carrying its
 * audit row (the messages the API has always logged) and its event: `application:created` (the
 * tenant's first management application too), `application:updated` (also when a key is added or
 * deleted: the application object lists its keys), `application:deleted`; `data` is the application as
 * GET answers it, never a clear key.
 */
@Injectable()
export class ApplicationsService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly applications: ApplicationsRepository,
    private readonly keys: ApplicationKeyResolver,
  ) {}

  private event(type: EventType, app: ApplicationEntity, keys: KeySummary[]): OutboxEvent {
    return {
      tenantId: app.tenantId,
      type,
      entityId: app.id,
      data: applicationDto(
        app,
        keys.map((k) => keyDto(k)),
      ),
    };
  }

  /**
   * Creates an application (and its first key unless told not to) in the caller's change, with its
   * event; the caller adds the audit row it means (the API's create, a tenant's creation).
   */
  async createApplication(change: Change, input: NewApplication): Promise<ApplicationDto> {
    const now = new Date();
    const app: ApplicationEntity = {
      id: input.id ?? randomUUID(),
      tenantId: input.tenantId,
      name: input.name,
      type: input.type,
      permissions: [...new Set(input.permissions)],
      rules: input.rules.length ? input.rules : null,
      allowedOrigins: input.type === 'public' ? (input.allowedOrigins ?? []) : null,
      createdBy: input.createdBy,
      createdAt: now,
      modifiedBy: null,
      modifiedAt: null,
    };
    await this.applications.insert(change, app);
    if (!input.createKey) {
      change.emit(this.event('application:created', app, []));
      return applicationDto(app, []);
    }
    const { entity, clear } = this.newKey(app, input.createdBy, now);
    await this.applications.insertKey(change, entity);
    change.emit(this.event('application:created', app, [entity]));
    return applicationDto(app, [keyDto(entity, clear)], clear);
  }

  async create(origin: RequestOrigin, dto: CreateApplicationDto): Promise<ApplicationDto> {
    const who = origin.actor;
    const rules = (dto.rules ?? []) as AccessRule[];
    const errors = checkGrants(dto.type, dto.permissions, rules);
    const allowedOrigins =
      dto.allowed_origins === undefined
        ? undefined
        : checkAllowedOrigins(dto.type, dto.allowed_origins, errors);
    if (Object.keys(errors).length) throw new ValidationException(errors);
    assertHolds(
      who,
      managementPermissions(dto.permissions, rules),
      'Creating an application with these permissions',
    );
    return this.work.transaction(origin, async (change) => {
      const created = await this.createApplication(change, {
        tenantId: who.tenantId,
        name: dto.name,
        type: dto.type,
        permissions: dto.permissions ?? [],
        rules,
        allowedOrigins,
        createdBy: who.applicationId,
        createKey: dto.create_key ?? true,
      });
      change.audit({
        entityType: 'application',
        entityId: created.id,
        operation: 'create',
        message: 'Application created',
      });
      return created;
    });
  }

  /**
   * Offset pages, oldest first; `pagination.after` is set whenever more applications follow, and
   * `start` (a previous `after`) continues from there instead of `page`, as Basis Theory's SDK does.
   */
  async list(who: Principal, query: ListApplicationsQueryDto): Promise<ApplicationPageDto> {
    const start =
      query.start !== undefined
        ? { afterId: decodeCursor(query.start, [CURSOR_UUID])[0] }
        : { skip: offsetOf(query).skip };
    const { total, rows } = await this.applications.page(
      { tenantId: who.tenantId, types: query.type, ids: query.id },
      start,
      query.size + 1,
    );
    const apps = rows.slice(0, query.size);
    const keys = apps.length
      ? await this.applications.keysOf(
          who.tenantId,
          apps.map((a) => a.id),
        )
      : [];
    const page = offsetPage(
      apps.map((app) =>
        applicationDto(
          app,
          keys.filter((k) => k.applicationId === app.id).map((k) => keyDto(k)),
        ),
      ),
      total,
      query,
    );
    const last = apps[apps.length - 1];
    return {
      pagination: {
        ...page.pagination,
        ...(rows.length > query.size && last ? { after: encodeCursor([last.id]) } : {}),
      },
      data: page.data,
    };
  }

  /**
   * The origins whose pages may embed the card elements of a public application (by id, from the frame,
   * which knows no tenant); undefined when no public application has this id.
   */
  allowedOriginsOf(id: string): Promise<string[] | undefined> {
    return this.applications.allowedOriginsOf(id);
  }

  async get(who: Principal, id: string): Promise<ApplicationDto> {
    const app = await this.findOwned(who, id);
    return applicationDto(app, await this.keyDtos(who.tenantId, id));
  }

  async update(origin: RequestOrigin, id: string, dto: UpdateApplicationDto): Promise<ApplicationDto> {
    const who = origin.actor;
    return this.work.transaction(origin, async (change) => {
      // This instance forgets cached keys as soon as the change commits (others when notified of it).
      change.afterCommit(() => this.keys.invalidate());
      await this.applications.lockTenant(change, who.tenantId);
      const app = await this.lockOwned(change, who, id);
      const permissions = dto.permissions ?? app.permissions;
      const rules = dto.rules ?? app.rules ?? [];
      const errors = checkGrants(app.type, dto.permissions, dto.rules);
      const allowedOrigins =
        dto.allowed_origins === undefined
          ? app.allowedOrigins
          : (checkAllowedOrigins(app.type, dto.allowed_origins, errors) ?? null);
      if (Object.keys(errors).length) throw new ValidationException(errors);
      assertHolds(who, managementPermissions(app.permissions, app.rules ?? []), 'Updating this application');
      assertHolds(who, managementPermissions(permissions, rules), 'Granting these permissions');
      if (administers(app) && !administers({ permissions }))
        await this.assertNotLastAdministrator(
          change,
          who,
          app,
          'Removing application:create or application:update from it',
        );
      const changes = {
        name: dto.name,
        permissions: [...new Set(permissions)],
        rules: rules.length ? rules : null,
        allowedOrigins,
        modifiedBy: who.applicationId,
        modifiedAt: new Date(),
      };
      await this.applications.update(change, who.tenantId, id, changes);
      const keys = await this.applications.keysIn(change, who.tenantId, [id]);
      change.emit(this.event('application:updated', { ...app, ...changes }, keys));
      change.audit({
        entityType: 'application',
        entityId: id,
        operation: 'update',
        message: 'Application updated',
      });
      return applicationDto(
        { ...app, ...changes },
        keys.map((k) => keyDto(k)),
      );
    });
  }

  async delete(origin: RequestOrigin, id: string): Promise<void> {
    const who = origin.actor;
    await this.work.transaction(origin, async (change) => {
      // This instance forgets cached keys as soon as the change commits (others when notified of it).
      change.afterCommit(() => this.keys.invalidate());
      await this.applications.lockTenant(change, who.tenantId);
      const app = await this.lockOwned(change, who, id);
      assertHolds(who, managementPermissions(app.permissions, app.rules ?? []), 'Deleting this application');
      if (administers(app)) await this.assertNotLastAdministrator(change, who, app, 'Deleting it');
      const keys = await this.applications.delete(change, who.tenantId, id);
      // As it stood before the deletion.
      change.emit(this.event('application:deleted', app, keys));
      change.audit({
        entityType: 'application',
        entityId: id,
        operation: 'delete',
        message: 'Application deleted',
      });
    });
  }

  async getKey(who: Principal, id: string, keyId: string): Promise<ApiKeyDto> {
    await this.findOwned(who, id);
    const key = await this.applications.findKey(who.tenantId, id, keyId);
    if (!key) throw ApplicationsException.notFound('Application key');
    return keyDto(key);
  }

  async listKeys(who: Principal, id: string): Promise<ApiKeyDto[]> {
    await this.findOwned(who, id);
    return this.keyDtos(who.tenantId, id);
  }

  async createKey(origin: RequestOrigin, id: string): Promise<ApiKeyDto> {
    const who = origin.actor;
    return this.work.transaction(origin, async (change) => {
      const app = await this.lockOwned(change, who, id);
      assertHolds(
        who,
        managementPermissions(app.permissions, app.rules ?? []),
        'Creating a key of this application',
      );
      const { entity, clear } = this.newKey(app, who.applicationId, new Date());
      // One statement adds the key and lists the application's keys, for its event.
      const keys = await this.applications.insertKeyListingKeys(change, entity);
      change.emit(this.event('application:updated', app, keys));
      change.audit({
        entityType: 'application',
        entityId: id,
        operation: 'update',
        message: `Application key ${entity.id} created`,
      });
      return keyDto(entity, clear);
    });
  }

  async deleteKey(origin: RequestOrigin, id: string, keyId: string): Promise<void> {
    const who = origin.actor;
    await this.work.transaction(origin, async (change) => {
      // This instance forgets cached keys as soon as the change commits (others when notified of it).
      change.afterCommit(() => this.keys.invalidate());
      await this.applications.lockTenant(change, who.tenantId);
      const app = await this.lockOwned(change, who, id);
      assertHolds(
        who,
        managementPermissions(app.permissions, app.rules ?? []),
        'Deleting a key of this application',
      );
      const keys = await this.applications.keysIn(change, who.tenantId, [id]);
      if (!keys.some((k) => k.id === keyId)) throw ApplicationsException.notFound('Application key');
      if (administers(app) && keys.length === 1)
        await this.assertNotLastAdministrator(change, who, app, 'Deleting its last key');
      await this.applications.deleteKey(change, who.tenantId, id, keyId);
      change.emit(
        this.event(
          'application:updated',
          app,
          keys.filter((k) => k.id !== keyId),
        ),
      );
      change.audit({
        entityType: 'application',
        entityId: id,
        operation: 'update',
        message: `Application key ${keyId} revoked`,
      });
    });
  }

  /** 409 when `app` is the tenant's last application holding application:create and application:update with a key. */
  private async assertNotLastAdministrator(
    change: Change,
    who: Principal,
    app: ApplicationEntity,
    doing: string,
  ): Promise<void> {
    if (
      (await this.applications.countOthersHoldingWithKey(change, who.tenantId, app.id, ADMINISTRATION)) === 0
    )
      throw new ApplicationsException(
        ApplicationsErrorCode.Conflict,
        `${doing} would leave the tenant without an application holding application:create and application:update (with a key); create another one first.`,
      );
  }

  permissions(type?: ApplicationType): PermissionDefinition[] {
    return PERMISSIONS.filter((p) => !type || p.application_types.includes(type));
  }

  private async findOwned(who: Principal, id: string): Promise<ApplicationEntity> {
    const app = await this.applications.findOne(who.tenantId, id);
    if (!app) throw ApplicationsException.notFound('Application');
    return app;
  }

  /** The caller's application, locked until the change ends. */
  private async lockOwned(change: Change, who: Principal, id: string): Promise<ApplicationEntity> {
    const app = await this.applications.lockOne(change, who.tenantId, id);
    if (!app) throw ApplicationsException.notFound('Application');
    return app;
  }

  private async keyDtos(tenantId: string, applicationId: string): Promise<ApiKeyDto[]> {
    const keys = await this.applications.keysOf(tenantId, [applicationId]);
    return keys.map((k) => keyDto(k));
  }

  /** A new key of the application (its digest stored, the clear key answered once). */
  private newKey(app: ApplicationEntity, createdBy: string | null, now: Date) {
    const clear = generateApiKey(KIND_OF_TYPE[app.type]);
    const entity: ApiKeyEntity = {
      id: randomUUID(),
      tenantId: app.tenantId,
      applicationId: app.id,
      keyHash: hashApiKey(clear),
      createdBy,
      createdAt: now,
    };
    return { entity, clear };
  }
}
