import { Module } from '@nestjs/common';
import { ApplicationsModule } from '../applications/applications.module';
import { ElementAssets } from './element-assets';
import { ElementsController } from './elements.controller';
import { ElementsService } from './elements.service';

/** The card elements: browser code and iframe documents served by the service (docs/elements.md). */
@Module({
  imports: [ApplicationsModule],
  controllers: [ElementsController],
  providers: [ElementsService, ElementAssets],
})
export class ElementsModule {}
