import type { AppConfig } from '../../config/app-config';
import { MasterKeyRing } from '../../common/crypto/master-keys';
import type { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { BootstrapService } from './bootstrap.service';
import type { TenantsService } from './tenants.service';

/**
 * The first start: the default tenant made (by TenantsService.createFirstTenant, whose spec runs it on the
 * real SQL) only when BOOTSTRAP is on, inside a request context of its own, and its management key printed
 * once, by the process that made it.
 */
describe('BootstrapService', () => {
  const created = {
    tenant_id: '00000000-0000-4000-8000-0000000000a1',
    management_application_id: '00000000-0000-4000-8000-0000000000a2',
    management_key: 'key_mgt_first',
  };
  let createFirstTenant: jest.Mock;

  /** The tenant keys' view of a ring: sealed or not. */
  const keysOf = (ring: MasterKeyRing) =>
    ({
      get sealed() {
        return ring.sealed;
      },
      whenUnsealed: (run: () => void) => ring.whenUnsealed(run),
    }) as unknown as TenantKeysService;

  function bootstrap(
    enabled: boolean,
    ring = new MasterKeyRing([{ version: 'v1', key: Buffer.alloc(32, 1) }], 'spec'),
  ): BootstrapService {
    const tenants = { createFirstTenant } as unknown as TenantsService;
    return new BootstrapService({ BOOTSTRAP: enabled } as AppConfig, tenants, keysOf(ring));
  }

  /** What printBanner writes, joined. */
  function printed(service: BootstrapService): string {
    const out: string[] = [];
    service.printBanner((text) => out.push(text));
    return out.join('');
  }

  beforeEach(() => {
    createFirstTenant = jest.fn().mockResolvedValue(created);
  });

  it('creates the default tenant in a request context of its own when BOOTSTRAP is on', async () => {
    const service = bootstrap(true);
    await service.onApplicationBootstrap();
    expect(createFirstTenant).toHaveBeenCalledTimes(1);
    expect(createFirstTenant).toHaveBeenCalledWith('default');
  });

  it('does nothing, and prints nothing, when BOOTSTRAP is off', async () => {
    const service = bootstrap(false);
    await service.onApplicationBootstrap();
    expect(createFirstTenant).not.toHaveBeenCalled();
    expect(printed(service)).toBe('');
  });

  it('prints the management key and ids once, after the start', async () => {
    const service = bootstrap(true);
    await service.onApplicationBootstrap();
    const banner = printed(service);
    expect(banner).toContain('FIRST START');
    expect(banner).toContain(`   ${created.management_key}\n`);
    expect(banner).toContain(`tenant_id: ${created.tenant_id}`);
    expect(banner).toContain(`management_application_id: ${created.management_application_id}`);
    // Never again: the key is not kept for a second banner.
    expect(printed(service)).toBe('');
  });

  it('prints nothing on an instance that found a tenant already there', async () => {
    createFirstTenant.mockResolvedValueOnce(undefined);
    const service = bootstrap(true);
    await service.onApplicationBootstrap();
    expect(printed(service)).toBe('');
  });

  it('on a sealed server (KEY_PROVIDER=split), creates the tenant and prints its banner once unsealed', async () => {
    const ring = new MasterKeyRing('sealed', 'spec');
    const service = bootstrap(true, ring);
    const write = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      await service.onApplicationBootstrap();
      expect(createFirstTenant).not.toHaveBeenCalled();
      ring.unseal([{ version: 'v1', key: Buffer.alloc(32, 1) }]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(createFirstTenant).toHaveBeenCalledWith('default');
      expect(write.mock.calls.map((call) => String(call[0])).join('')).toContain(created.management_key);
    } finally {
      write.mockRestore();
    }
    expect(printed(service)).toBe('');
  });

  it('lets a failed creation fail the start', async () => {
    createFirstTenant.mockRejectedValueOnce(new Error('the database is read-only'));
    await expect(bootstrap(true).onApplicationBootstrap()).rejects.toThrow('the database is read-only');
  });
});
