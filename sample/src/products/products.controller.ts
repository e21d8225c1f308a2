import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { integerField, stringField, type RequestBody } from '../common/request-body.js';
import { ProductsService, type EditResult, type Product } from './products.service.js';

@Controller('products')
export class ProductsController {
  constructor(private readonly products: ProductsService) {}

  /** A slow edit: `{ name?, durationMs? }`, taking `durationMs` (default 3000). */
  @Put(':id')
  edit(@Param('id') id: string, @Body() body: RequestBody): Promise<EditResult> {
    return this.products.edit(
      id,
      stringField(body, 'name', `Product ${id}`),
      integerField(body, 'durationMs', { min: 0, max: 60_000, fallback: 3_000 }),
    );
  }

  @Get(':id')
  get(@Param('id') id: string): Promise<Product> {
    return this.products.get(id);
  }
}
