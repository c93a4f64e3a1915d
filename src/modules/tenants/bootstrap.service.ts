import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { AppConfig } from '../../config/app-config';
import { CreatedTenantDto } from './dto/tenant.dto';
import { TenantsService } from './tenants.service';

/**
 * On an empty database, creates the `default` tenant; its management key is printed once to stdout by
 * `printBanner`, which the server calls after it listens, so that the key is the last thing on screen.
 * An advisory lock held by its change makes it happen once when several instances start together. A
 * sealed server (KEY_PROVIDER=split) does it once its custodians have unsealed it, and prints the banner
 * then.
 */
@Injectable()
export class BootstrapService implements OnApplicationBootstrap {
  private created: CreatedTenantDto | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly tenants: TenantsService,
    private readonly keys: TenantKeysService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.BOOTSTRAP) return;
    if (!this.keys.sealed) {
      this.created = await this.tenants.createFirstTenant('default');
      return;
    }
    this.keys.whenUnsealed(() => {
      this.tenants.createFirstTenant('default').then(
        (created) => {
          this.created = created;
          this.printBanner();
        },
        (error: unknown) =>
          new Logger('Bootstrap').error({ err: error }, 'the default tenant was not created'),
      );
    });
  }

  /** Prints the first-start banner (once), if this process created the default tenant. */
  printBanner(write: (text: string) => void = (text) => process.stdout.write(text)): void {
    if (this.created) printManagementKey(this.created, write);
    this.created = undefined;
  }
}

function printManagementKey(created: CreatedTenantDto, write: (text: string) => void): void {
  const rule = '='.repeat(78);
  write(
    [
      '',
      rule,
      ' FIRST START: created tenant "default" and its management application.',
      ' Management key (shown once, store it now; it is never printed again):',
      '',
      `   ${created.management_key}`,
      '',
      ` tenant_id: ${created.tenant_id}`,
      ` management_application_id: ${created.management_application_id}`,
      rule,
      '',
    ].join('\n') + '\n',
  );
}
